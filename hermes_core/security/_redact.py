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
