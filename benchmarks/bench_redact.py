"""Redaction speed: ``redact()`` beside ``str.replace`` over the same text and beside the previous redactor.

Five texts of about 1 MB: plain prose, this project's own source code, random letters (with a blank about every
tenth character), one unbroken run of letters, and secret-dense text (code with a fake secret of some provider
every few lines). Target: at most 40 ms/MB on prose, code and random letters. Each is run with no secret-looking environment variables, and
again with five of them set (their values and encodings are searched too). Subjects are interleaved within
each round; the figures are min and median milliseconds of CPU time per MB, MB/s, and the ratio new/old. Two
baselines: the redactor before issue 16 ("old redact", kept below) and the one before issue 26's speed work
("before w26", the differential test's oracle in tests/security/redact_oracle). First, the cost per call of a
38 KB read_file page (numbered lines of code), what ``hermes mcp serve`` redacts on every read_file call.

Run: .venv/bin/python benchmarks/bench_redact.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import string
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hermes_core.security import redact  # noqa: E402

# the redactor as it was before issue 26's speed work, frozen as the differential test's oracle
sys.path.insert(0, str(ROOT / "tests" / "security"))
from redact_oracle import redact as before_redact  # noqa: E402

# ---------------------------------------------------------------------------------------------------------
# BASELINE: a frozen copy of the redactor as it was before issue 16 (hermes_core/security/_redact.py at
# b43da28), kept verbatim so the old figure can be measured beside the new one. Not used anywhere else.
# ---------------------------------------------------------------------------------------------------------
OLD_REDACTOR_SOURCE = r'''
"""The redactor: ``redact(text)`` removes secrets from anything headed to the model or the logs.

It knows provider key formats (OpenAI, Anthropic, Google, GitHub, GitLab, Slack, Stripe, Hugging Face, AWS,
Azure), JWTs, Bearer/Basic headers, passwords in URLs, connection strings and command lines, PEM private keys,
webhook URLs and query secrets, ``KEY=value`` and JSON/YAML fields whose names say secret/token/password/key,
and the values of secret-looking environment variables of this process. Look-alikes stay: git SHAs, digests,
UUIDs, paths, ARNs, ``max_tokens``.

Cost: short strings return after a length check or one pre-check regex; every pattern is linear (no nested
quantifiers), so a 1 MB string costs a few passes over it. The environment part rescans ``os.environ`` only
when its size or one of the remembered secret values changes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

__all__ = ["MASK", "redact"]

MASK = "[REDACTED]"
_MIN_SECRET = 8

# Every pattern below needs one of these characters (a separator, a digit, "-", "_" or "~") or one of the few
# words checked next; plain prose has none and is returned after one charset scan.
_PRECHECK = re.compile(r"[=:@_~0-9-]")
_PRECHECK_WORDS = ("earer", "asic", "AIza", "eyJ")

_Sub = tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]


def _keep_group1(m: re.Match[str]) -> str:
    return m.group(1) + MASK


_SECRET_NAME_END = re.compile(
    r"(secret|token|password|passwd|passphrase|pass|pwd|apikey|api_key|api-key|accesskey|access_key|secretkey|"
    r"secret_key|privatekey|private_key|signingkey|signing_key|encryptionkey|encryption_key|masterkey|master_key|"
    r"authkey|auth_key|clientsecret|client_secret|credential|credentials|auth|authorization|accountkey|"
    r"sharedaccesskey|sessionkey|session_key|cookie|webhook_url|webhookurl|dsn|connection_string|connectionstring|"
    r"licensekey|license_key|sas|key)$"
)
_NOT_SECRET_NAMES = frozenset(
    {
        "pwd",
        "oldpwd",
        "key",
        "sort_key",
        "primary_key",
        "foreign_key",
        "keypass",
        "bypass",
        "compass",
        "pass",
        "sas",
        "auth",
        "cache_key",
        "hotkey",
        "monkey",
        "turkey",
        "passkey",
        "idempotency_key",
        "partition_key",
        "dsn",
        "cookie",
    }
)
_WEAK_NAMES = frozenset({"key", "pass", "auth", "sas", "dsn", "cookie"})
_PLACEHOLDER = re.compile(
    r"^(\$\{?[A-Za-z_]\w*\}?|<[^>]*>|\*+|x+|null|none|nil|true|false|changeme|\.\.\.|\[REDACTED.*|bearer|basic|token|"
    r"digest|bot)$",
    re.I,
)


def _field(m: re.Match[str], group: str) -> str:
    name = m.group("name")
    low = name.lower()
    end = _SECRET_NAME_END.search(low)
    if end is None or low in _NOT_SECRET_NAMES:
        return m.group(0)
    if end.group(1) in _WEAK_NAMES and len(low) == len(end.group(1)):
        return m.group(0)
    value = m.group(group)
    if len(value) < 4 or _PLACEHOLDER.match(value):
        return m.group(0)
    start, stop = m.start(group) - m.start(0), m.end(group) - m.start(0)
    whole = m.group(0)
    return whole[:start] + MASK + whole[stop:]


_SUBS: list[_Sub] = [
    (
        re.compile(
            r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY( BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\Z)",
            re.S,
        ),
        "-----BEGIN PRIVATE KEY-----" + MASK + "-----END PRIVATE KEY-----",
    ),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), MASK),
    (re.compile(r"\bsk-(?:ant-|proj-|svcacct-|admin-|or-v1-)?[A-Za-z0-9_-]{20,}"), MASK),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b|\bya29\.[0-9A-Za-z_-]{20,}|\bGOCSPX-[A-Za-z0-9_-]{20,}"), MASK),
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"), MASK),
    (re.compile(r"\bgl(?:pat|dt|rt|ptt|cbt|oas|ft|imt|soat|agent)-[A-Za-z0-9_-]{20,}"), MASK),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}|\bxapp-\d-[A-Za-z0-9-]{10,}"), MASK),
    (re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|\bwhsec_[A-Za-z0-9]{20,}"), MASK),
    (re.compile(r"\bhf_[A-Za-z0-9]{30,}"), MASK),
    (re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"), MASK),
    (re.compile(r"\b[a-zA-Z0-9_~.-]{3}\dQ~[a-zA-Z0-9_~.-]{31,34}"), MASK),
    (
        re.compile(
            r"(https://(?:hooks\.slack\.com/(?:services|workflows|triggers)|discord(?:app)?\.com/api/webhooks|"
            r"[a-z0-9.-]*webhook\.office\.com/webhookb2|outlook\.office\.com/webhook)/)[^\s\"'<>]+"
        ),
        _keep_group1,
    ),
    (
        re.compile(
            r"\b((?:[Aa]uthorization|[Pp]roxy-[Aa]uthorization)\s*[:=]\s*\"?(?:[Bb]earer|[Bb]asic|[Tt]oken|[Dd]igest|Bot)?\s*)"
            r"[A-Za-z0-9._~+/=:-]{6,}"
        ),
        _keep_group1,
    ),
    (re.compile(r"\b((?:[Bb]earer|[Bb]asic|BEARER|BASIC)\s+)[A-Za-z0-9._~+/-]{8,}=*"), _keep_group1),
    (
        re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:/@\"'<>]{1,128}:)[^\s@/\"'<>]{1,256}(?=@)"),
        _keep_group1,
    ),
    (
        re.compile(
            r"([?&;](?:token|access_token|refresh_token|id_token|api_key|apikey|key|secret|client_secret|sig|"
            r"signature|password|passwd|pwd|auth|code|X-Amz-Signature|X-Amz-Credential|X-Amz-Security-Token)=)"
            r"[^&\s\"'<>#]{4,}",
            re.I,
        ),
        _keep_group1,
    ),
    (re.compile(r"(\bsshpass\s+-p\s*['\"]?)[^\s'\"]+"), _keep_group1),
    (
        re.compile(
            r"(\b(?:mysql|mysqldump|mariadb|mysqladmin|mysqlimport)\b[^\n|;&]{0,200}?\s-p)(?!\s)['\"]?[^\s'\"]+"
        ),
        _keep_group1,
    ),
    (
        re.compile(
            r"((?<![\w-])--?(?:password|passwd|pass|token|api-key|apikey|secret|client-secret|auth-token|access-token)"
            r"(?:=|\s+)['\"]?)(?!-)[^\s'\"]{3,}",
            re.I,
        ),
        _keep_group1,
    ),
    (
        re.compile(
            r"(?P<q>[\"']?)(?P<name>[A-Za-z_][A-Za-z0-9_.-]{0,80})(?P=q)(?P<sep>\s*(?:=|:(?!//))\s*)"
            r"(?:\"(?P<value>[^\"\n]*)\"|'(?P<value2>[^'\n]*)'|(?P<value3>[^\s\"',;&}\]]+))"
        ),
        None,
    ),  # type: ignore[list-item]
]


def _field_any(m: re.Match[str]) -> str:
    for group in ("value", "value2", "value3"):
        if m.group(group) is not None:
            return _field(m, group)
    return m.group(0)


_SUBS[-1] = (_SUBS[-1][0], _field_any)

# -- environment values -----------------------------------------------------------------------------------
_ENV_SECRET = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|PRIVATE|SESSION|COOKIE|API|DSN|PASS", re.I
)
_ENV_NOT_SECRET = re.compile(
    r"(_PATH|_FILE|_DIR|_SOCK|_HOME|_PID|_ID|_REGION|_USER|_NAME|_HOST|_PORT|_TYPE|_MODE)$|^SSH_AUTH_SOCK$|PASSTHROUGH",
    re.I,
)
_ENV_DATA = getattr(os.environ, "_data", None)
_env_size = -1
_env_checks: tuple[tuple[object, object], ...] = ()
_env_values: tuple[str, ...] = ()


def _as_str(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return str(value)


def _env_secrets() -> tuple[str, ...]:
    """Values of secret-looking environment variables; rescans only when the environment changed."""
    global _env_size, _env_checks, _env_values
    data = _ENV_DATA if isinstance(_ENV_DATA, dict) else dict(os.environ)
    if _env_size == len(data):
        get = data.get
        for k, v in _env_checks:
            if get(k) is not v:
                break
        else:
            return _env_values
    found: list[tuple[object, object]] = []
    values: set[str] = set()
    for key, raw in list(data.items()):
        name = _as_str(key)
        if not _ENV_SECRET.search(name) or _ENV_NOT_SECRET.search(name):
            continue
        found.append((key, raw))
        value = _as_str(raw).strip()
        if (
            len(value) >= _MIN_SECRET
            and not value.startswith("/")
            and not value.isdigit()
            and value.lower() not in ("true", "false", "yes", "no")
        ):
            values.add(value)
    _env_size = len(data)
    _env_checks = tuple(found)
    _env_values = tuple(sorted(values, key=len, reverse=True))
    return _env_values


def redact(text: str) -> str:
    """Return ``text`` with secrets replaced by ``[REDACTED]`` (non-str input is converted with ``str``)."""
    if not isinstance(text, str):
        text = str(text)
    if len(text) < _MIN_SECRET:
        return text
    for value in _env_secrets():
        if value in text:
            text = text.replace(value, MASK)
    if _PRECHECK.search(text) is None and not any(word in text for word in _PRECHECK_WORDS):
        return text
    for pattern, repl in _SUBS:
        text = pattern.sub(repl, text)  # type: ignore[arg-type]
    return text
'''
_old: dict[str, object] = {"__name__": "old_redact"}
exec(compile(OLD_REDACTOR_SOURCE, "old_redact.py", "exec"), _old)
old_redact: Callable[[str], str] = _old["redact"]  # type: ignore[assignment]

MB = 1_000_000
WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "that",
    "for",
    "it",
    "with",
    "as",
    "his",
    "on",
    "be",
    "at",
    "by",
    "this",
    "had",
    "not",
    "are",
    "but",
    "from",
    "or",
    "have",
    "an",
    "they",
    "which",
    "one",
    "you",
    "were",
    "her",
    "all",
    "she",
    "there",
    "would",
    "their",
    "we",
    "him",
    "been",
    "has",
    "when",
    "who",
    "will",
    "more",
    "no",
    "if",
    "out",
    "so",
    "said",
    "what",
    "up",
    "its",
    "about",
    "into",
    "than",
    "them",
    "can",
    "only",
    "other",
    "new",
    "some",
    "could",
    "time",
    "these",
    "two",
    "may",
    "then",
    "do",
    "first",
    "any",
    "my",
    "now",
    "such",
    "like",
    "our",
    "over",
    "man",
    "me",
    "even",
    "most",
    "made",
    "after",
    "also",
    "did",
    "many",
    "before",
    "must",
    "through",
    "back",
    "years",
    "where",
    "much",
    "your",
    "way",
    "well",
    "down",
    "should",
    "because",
    "each",
    "just",
    "those",
    "people",
    "password",
    "token",
    "key",
    "secret",
    "auth",
]


def prose(rng: random.Random) -> str:
    """Sentences of common words (and words such as password, token, key), with the odd number, date,
    hyphenated word and colon that real prose has (each trips the old redactor's pre-check)."""
    extras = ["in 2024", "3 of them", "well-known", "e-mail", "note:", "on 12 May", "(see 4.2)", "50%"]
    out: list[str] = []
    size = 0
    while size < MB:
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 18))]
        if rng.random() < 0.3:
            words.insert(rng.randrange(len(words)), rng.choice(extras))
        line = " ".join(words).capitalize() + "."
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)[:MB]


def code() -> str:
    files = sorted((ROOT / "hermes_core").rglob("*.py")) + sorted((ROOT / "hermes_builtin").rglob("*.py"))
    text = "\n".join(f.read_text(encoding="utf-8") for f in files)
    return (text * (MB // len(text) + 1))[:MB]


def _alnum(rng: random.Random, n: int, alphabet: str = "") -> str:
    chars = alphabet or "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(rng.choice(chars) for _ in range(n))


def secret_dense(rng: random.Random, base: str) -> str:
    makers = [
        lambda: "OPENAI_API_KEY=sk-proj-" + _alnum(rng, 48),
        lambda: f'token = "ghp_{_alnum(rng, 36)}"',
        lambda: f"aws_access_key_id = AKIA{_alnum(rng, 16, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567')}",
        lambda: f"aws_secret_access_key = {_alnum(rng, 40)}",
        lambda: f"url = 'postgres://app:{_alnum(rng, 16)}@db.internal:5432/app'",
        lambda: f"Authorization: Bearer {_alnum(rng, 32)}",
        lambda: f"xoxb-{rng.randint(10**11, 10**12)}-{_alnum(rng, 24)}",
        lambda: _alnum(rng, 64, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"),
    ]
    lines = base.split("\n")
    out = []
    for i, line in enumerate(lines):
        out.append(line)
        if i % 8 == 0:
            out.append(rng.choice(makers)())
    return "\n".join(out)[:MB]


def random_letters(rng: random.Random) -> str:
    """Random ASCII letters with a space or newline about every tenth character (what a model may be shown from a
    minified or binary-ish file), the case that once cost twice prose's time."""
    return "".join(rng.choice(string.ascii_letters + "     \n") for _ in range(MB))


def letter_run(rng: random.Random) -> str:
    """One megabyte of lower-case letters without a break (a name search that once scanned to the end of the run
    at every keyword: seconds per MB)."""
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(MB))


def timed(fn: Callable[[str], object], text: str) -> float:
    # CPU time of this process: on a shared machine wall time also counts other processes' time slices
    start = time.process_time()
    fn(text)
    return (time.process_time() - start) * 1000 * MB / len(text)


def run(texts: dict[str, str], rounds: int) -> None:
    subjects: dict[str, Callable[[str], object]] = {
        "str.replace": lambda t: t.replace("[no such secret in here]", "[REDACTED]"),
        "old redact": old_redact,
        "before w26": before_redact,
        "redact": redact,
    }
    for label, text in texts.items():
        for fn in subjects.values():
            fn(text)  # warm caches (environment scan, compiled patterns)
        times: dict[str, list[float]] = {name: [] for name in subjects}
        for _ in range(rounds):
            for name, fn in subjects.items():
                times[name].append(timed(fn, text))
        print(f"  {label} ({len(text) / MB:.2f} MB)")
        for name, values in times.items():
            best, mid = min(values), statistics.median(values)
            print(f"    {name:12s} min {best:8.2f} ms/MB   median {mid:8.2f} ms/MB   {1000 / mid:9.1f} MB/s")
        ratio = statistics.median(times["redact"]) / statistics.median(times["old redact"])
        target = "  (target <= 40 ms/MB)" if label != "secret-dense" else ""
        print(f"    redact / old redact (median): {ratio:.2f}x{target}")
        ratio = statistics.median(times["redact"]) / statistics.median(times["before w26"])
        print(f"    redact / before w26 (median): {ratio:.2f}x")


def numbered_page(source: str, first: int, size: int = 38_000) -> str:
    """A page as read_file returns it (``     1|line``), about ``size`` characters from line ``first``."""
    lines = source.split("\n")
    out: list[str] = []
    total = 0
    while total < size:
        line = f"{first + 1:6d}|{lines[first % len(lines)]}"
        out.append(line)
        total += len(line) + 1
        first += 1
    return "\n".join(out)


def page_results(source: str, rounds: int) -> None:
    """What one read_file page costs (38 KB of this project's code, numbered): ms per call, 20 pages a round."""
    pages = [numbered_page(source, first) for first in range(0, 20 * 997, 997)]
    subjects = {"old redact": old_redact, "before w26": before_redact, "redact": redact}
    times: dict[str, list[float]] = {name: [] for name in subjects}
    for fn in subjects.values():
        fn(pages[0])
    for _ in range(rounds):
        for name, fn in subjects.items():
            start = time.process_time()
            for page in pages:
                fn(page)
            times[name].append((time.process_time() - start) / len(pages) * 1000)
    print(f"  a read_file page ({len(pages[0]) / 1000:.0f} KB, numbered lines of code), per call")
    for name, values in times.items():
        print(f"    {name:12s} min {min(values):8.3f} ms   median {statistics.median(values):8.3f} ms")
    ratio = statistics.median(times["redact"]) / statistics.median(times["before w26"])
    print(f"    redact / before w26 (median): {ratio:.2f}x")


def short_results(rounds: int) -> None:
    """Most results are small: the cost per call of a 300-byte result (code with a key= and a URL)."""
    text = 'def fetch(url, timeout=30):\n    """GET url; key=value pairs go in params."""\n' * 3
    text = text[:300]
    number = 2000
    times: dict[str, list[float]] = {"old redact": [], "before w26": [], "redact": []}
    for _ in range(rounds):
        for name, fn in (("old redact", old_redact), ("before w26", before_redact), ("redact", redact)):
            start = time.process_time()
            for _ in range(number):
                fn(text)
            times[name].append((time.process_time() - start) / number * 1e6)
    print(f"  a {len(text)}-byte result, per call")
    for name, values in times.items():
        print(f"    {name:12s} min {min(values):8.2f} us   median {statistics.median(values):8.2f} us")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    rng = random.Random(16)
    base_code = code()
    texts = {
        "plain prose": prose(rng),
        "code": base_code,
        "random letters": random_letters(rng),
        "one run of letters": letter_run(rng),
        "secret-dense": secret_dense(rng, base_code),
    }
    for name in [n for n in os.environ if redact_env_name(n)]:
        del os.environ[name]
    print("no secret environment variables:")
    page_results(base_code, args.rounds)
    run(texts, args.rounds)
    for i in range(5):
        os.environ[f"BENCH_SERVICE_{i}_API_KEY"] = _alnum(rng, 40)
    print("five secret environment variables set:")
    run(texts, args.rounds)
    short_results(args.rounds)


def redact_env_name(name: str) -> bool:
    upper = name.upper()
    return any(word in upper for word in ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASS", "CREDENTIAL", "AUTH"))


if __name__ == "__main__":
    main()
