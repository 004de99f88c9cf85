"""The redactor: ``redact(text)`` removes secrets from anything headed to the model or the logs.

What it finds, each from the provider's documented token shape or from context:
- provider keys and tokens with a recognisable prefix (OpenAI, Anthropic, GitHub, GitLab, Slack, Stripe, AWS,
  Google, Hugging Face, npm, PyPI, SendGrid, Twilio, Discord, Telegram, Azure and more, see ``_TOKENS``),
  JWTs, and an AWS secret access key printed next to its key id;
- private keys: a whole PEM block, and also body lines on their own (a key printed one line at a time, or a
  page of one), passwords in URLs (``scheme://user:password@``), Authorization headers, ``curl -u``, command
  line flags such as ``--password``, and ``PASSWORD '...'`` in SQL;
- values assigned to names that say secret, token, password, API key and the like, in code, JSON, YAML (block
  scalars, tags and anchors too), ``.env``, INI, TOML (triple-quoted strings too), XML elements and
  ``key=/name= value=`` attribute pairs, and query strings; passwords of netrc entries: but only literal values. A
  value that is ``None``, a call, a subscript, a variable, an attribute, a type or a placeholder (``${VAR}``,
  ``<your-key>``, ``changeme``) is code, not a secret, and stays exactly as it was, so a ``patch`` copied from
  ``read_file`` output still applies;
- the values of this process's own secret-looking environment variables, also base64, hex or reversed;
- all of the above in disguise (``_redact_forms``): percent-encoded, with an invisible character inside the name or
  the key, in fullwidth letters, or a key written in capitals. A URL whose port is followed by a fragment or a
  query (``http://127.0.0.1:8080#@example.com``) holds no password and stays.

Cost: provider rules run only around long runs of token characters (found with one ``bytes.translate``
and ``find``; the windows are joined and each rule runs once over them, or over the whole text when runs cover
most of it), and only when a character each rule needs is in the text (one memchr); every other detector is a
regular expression led by a literal (its search is the literal's), over the text or over one lower-cased ASCII
copy of it (so keyword searches stay case-insensitive without a case-insensitive regex; and a byte per
character is searched faster than a text holding a character beyond Latin-1, two bytes per character). Whether
each keyword is there, and where, is found for all of them in one pass (``_Triggers``), so a pass whose words
are absent skips the text and an assignment's pattern is tried only where its keyword stands; key lines
are found from the end of each line in the reversed bytes. Patterns compile on first use. All are linear (bounded repeats,
no nested quantifiers). Found secrets are collected as spans and the output is built once.
``benchmarks/bench_redact.py`` measures it: 18-24 ms per MB of prose, code and random letters (CPU time).
"""

from __future__ import annotations

import bisect
import itertools
import os
import re
import string
from collections.abc import Callable, Iterable, Iterator
from typing import Any, AnyStr, Generic

from ._redact_forms import undisguised

__all__ = ["MASK", "redact"]

MASK = "[REDACTED]"
_MIN_SECRET = 8

Span = tuple[int, int]

# -- provider tokens ----------------------------------------------------------------------------------------
# Each pattern starts with a literal, so the regex engine jumps from one occurrence of it to the next; a
# boundary check ("not preceded by a word character") comes right after that literal, never before it.
_A = r"A-Za-z0-9"
_NOT_AFTER = r"(?![A-Za-z0-9_-])"


def _start(literal: str) -> str:
    """``literal`` as a pattern, not preceded by a letter, digit or underscore."""
    return re.escape(literal) + rf"(?<![A-Za-z0-9_]{re.escape(literal)})"


def _mixed(value: str) -> bool:
    """Random-looking: a letter and a digit (a real key of 20+ characters almost surely has both)."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _random(value: str) -> bool:
    """A digit, an upper and a lower case letter: how generated keys look, and words rarely do."""
    return (
        any(c.isdigit() for c in value)
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
    )


class _Lazy(Generic[AnyStr]):
    """A pattern compiled on first use: most texts never need most rules, and import stays cheap."""

    __slots__ = ("_compiled", "flags", "source")

    def __init__(self, source: AnyStr, flags: int = 0) -> None:
        self.source: AnyStr = source
        self.flags = flags
        self._compiled: re.Pattern[AnyStr] | None = None

    def get(self) -> re.Pattern[AnyStr]:
        if self._compiled is None:
            self._compiled = re.compile(self.source, self.flags)
        return self._compiled


_TokenRule = tuple[tuple[str, ...], _Lazy[str], int, Callable[[str], bool] | None]


def _rule(
    literals: str | tuple[str, ...], pattern: str, group: int = 0, check: Callable[[str], bool] | None = None
) -> _TokenRule:
    return ((literals,) if isinstance(literals, str) else literals, _Lazy(pattern), group, check)


_TOKENS: tuple[_TokenRule, ...] = (
    # OpenAI (sk-proj-, sk-svcacct-, sk-admin-, legacy sk-), Anthropic (sk-ant-api03-, sk-ant-admin01-),
    # OpenRouter (sk-or-v1-), DeepSeek and other OpenAI-compatible services
    _rule("sk-", _start("sk-") + rf"[{_A}][{_A}_-]{{19,}}", 0, _mixed),
    # Stripe secret and restricted keys, webhook signing secrets
    _rule("sk_", _start("sk_") + rf"(?:live|test)_[{_A}]{{16,}}", 0, _mixed),
    _rule("rk_", _start("rk_") + rf"(?:live|test)_[{_A}]{{16,}}", 0, _mixed),
    _rule("whsec_", _start("whsec_") + rf"[{_A}+/=]{{20,}}"),
    # GitHub: personal, OAuth, user-to-server, server-to-server and refresh tokens; fine-grained PATs
    _rule("gh", _start("gh") + rf"[pousr]_[{_A}]{{30,}}"),
    _rule("github_pat_", _start("github_pat_") + rf"[{_A}_]{{22,}}"),
    # GitLab personal, deploy, runner, trigger, CI job, feed, OAuth, agent, SCIM and incoming-mail tokens
    _rule("gl", _start("gl") + rf"(?:pat|dt|rt|ptt|cbt|ft|oas|agent|soat|imt|ffct)-[{_A}_-]{{20,}}"),
    # Slack bot, user, app-level, config and refresh tokens; incoming webhooks
    _rule("xox", _start("xox") + rf"[abposre]-[0-9]{{6,}}-[{_A}-]{{10,}}", 0, _mixed),
    _rule("xapp-", _start("xapp-") + rf"\d-[{_A}-]{{10,}}"),
    _rule("hook", r"hooks\.slack\.com/(?:services|workflows|triggers)/([^\s\"'<>]+)", 1),
    # Discord and Microsoft Teams webhooks (the URL is the credential)
    _rule("hook", r"/api/webhooks/[0-9]+/([^\s\"'<>/?#]+)", 1),
    _rule("hook", r"webhook\.office\.com/webhookb2/([^\s\"'<>]+)", 1),
    # AWS access key ids (long-term, temporary, and the two other documented prefixes)
    _rule("A", r"A(?<![A-Z0-9]A)(?:KIA|SIA|BIA|CCA)[A-Z0-9]{16}(?![A-Z0-9])"),
    # Google API keys, OAuth access tokens, OAuth client secrets, refresh tokens
    _rule("AIza", rf"AIza[{_A}_-]{{35}}"),
    _rule("ya29.", _start("ya29.") + rf"[{_A}_-]{{20,}}"),
    _rule("GOCSPX-", rf"GOCSPX-[{_A}_-]{{20,}}"),
    _rule("1//0", _start("1//0") + rf"[{_A}_-]{{40,}}"),
    # Hugging Face user and organisation tokens
    _rule("hf_", _start("hf_") + rf"[{_A}]{{30,}}"),
    _rule("api_org_", _start("api_org_") + rf"[{_A}]{{30,}}"),
    # npm access tokens, PyPI API tokens (a macaroon that starts with the base64 of "pypi.org")
    _rule("npm_", _start("npm_") + rf"[{_A}]{{36}}"),
    _rule("pypi-", _start("pypi-") + rf"AgE[{_A}_-]{{40,}}"),
    # SendGrid, Twilio API key SIDs, Mailgun, Databricks, Postman, New Relic
    _rule("SG.", _start("SG.") + rf"[{_A}_-]{{22}}\.[{_A}_-]{{43}}"),
    _rule("SK", r"SK(?<![A-Za-z0-9]SK)[0-9a-fA-F]{32}(?![A-Za-z0-9])"),
    _rule("key-", r"key-(?<![A-Za-z0-9_-]key-)[0-9a-f]{32}(?![A-Za-z0-9])"),
    _rule("dapi", r"dapi(?<![A-Za-z0-9]dapi)[0-9a-f]{32}(?:-\d)?(?![A-Za-z0-9])"),
    _rule("PMAK-", r"PMAK-[0-9a-f]{24}-[0-9a-f]{34}"),
    _rule("NRAK-", r"NRAK-[A-Z0-9]{27}"),
    # Discord bot tokens (base64 user id . timestamp . HMAC): the timestamp and HMAC after the id
    _rule(
        ".",
        rf"\.(?:(?<=[MNO][{_A}_-]{{23}}\.)|(?<=[MNO][{_A}_-]{{24}}\.)|(?<=[MNO][{_A}_-]{{25}}\.)|"
        rf"(?<=[MNO][{_A}_-]{{26}}\.))([{_A}_-]{{6}}\.[{_A}_-]{{27,40}}){_NOT_AFTER}",
        1,
        _mixed,
    ),
    # Telegram bot tokens (bot id : 35 characters): the part after the id
    _rule(":", rf":(?<=[0-9]{{8}}:)([{_A}_-]{{35}}){_NOT_AFTER}", 1, _mixed),
    # JWT (signed or not) and Mapbox secret tokens
    _rule("eyJ", rf"eyJ(?<![{_A}_-]eyJ)[{_A}_-]{{8,}}\.eyJ[{_A}_-]{{8,}}\.[{_A}_-]*"),
    _rule("k.eyJ", _start("sk.eyJ") + rf"[{_A}_-]{{20,}}\.[{_A}_-]{{20,}}"),
    # Azure: storage and Service Bus keys in connection strings, SAS signatures, Entra ID client secrets
    _rule("AccountKey=", r"AccountKey=([A-Za-z0-9+/]{20,}={0,2})", 1),
    _rule("SharedAccess", r"SharedAccess(?:Key|Signature)=([^;\s\"'<>]{16,})", 1),
    _rule("Q~", rf"Q~(?<=[{_A}_~.-]{{3}}[0-9]Q~)[{_A}_~.-]{{31,34}}", 0),
    # Shopify, DigitalOcean, Linear, Doppler, Atlassian, Grafana, Vault, age, Tailscale, Replicate, Groq,
    # xAI, Perplexity, Notion, Figma, Supabase, Pulumi, Netlify, Square, Dropbox
    _rule("shp", _start("shp") + r"(?:at|ss|ca|pa)_[0-9a-fA-F]{32}"),
    _rule("_v1_", r"_v1_(?<=do[opr]_v1_)[0-9a-f]{64}"),
    _rule("lin_api_", rf"lin_api_[{_A}]{{40}}"),
    _rule("dp.", _start("dp.") + rf"(?:st|pt|ct|sa|scim|audit)\.[{_A}_.-]{{40,}}"),
    _rule("ATATT3", rf"ATATT3[{_A}_=-]{{100,}}"),
    _rule(("glsa_", "glc_"), _start("gl") + rf"(?:sa|c)_[{_A}_+/=]{{32,}}"),
    _rule(("hvs.", "hvb.", "hvr."), _start("hv") + rf"[sbr]\.[{_A}_-]{{24,}}"),
    _rule("AGE-SECRET-KEY-1", r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
    _rule("tskey-", rf"tskey-[a-z]+-[{_A}-]{{20,}}"),
    _rule("r8_", _start("r8_") + rf"[{_A}]{{37}}"),
    _rule("gsk_", _start("gsk_") + rf"[{_A}]{{48,}}"),
    _rule("xai-", _start("xai-") + rf"[{_A}]{{60,}}"),
    _rule("pplx-", _start("pplx-") + rf"[{_A}]{{40,}}"),
    _rule("ntn_", _start("ntn_") + rf"[{_A}]{{40,}}"),
    _rule("secret_", _start("secret_") + rf"[{_A}]{{43}}{_NOT_AFTER}", 0, _mixed),
    _rule("figd_", _start("figd_") + rf"[{_A}_-]{{40,}}"),
    _rule(("sbp_", "sb_secret_"), _start("sb") + rf"(?:p_[0-9a-f]{{40}}|_secret_[{_A}_-]{{20,}})"),
    _rule("pul-", _start("pul-") + r"[0-9a-f]{40}"),
    _rule("nfp_", _start("nfp_") + rf"[{_A}]{{36,}}"),
    _rule("sq0", _start("sq0") + rf"(?:atp|csp)-[{_A}_-]{{22,}}"),
    _rule("sl.", _start("sl.") + rf"[{_A}_-]{{130,}}"),
)

# An AWS secret access key (40 characters) close after an access key id, as in a credentials CSV.
# The prefixes of the keys above that hold lower-case letters, in capitals (SK-PROJ-, GHP_, HF_...): a key
# written in capitals is looked for (lower-cased) only where a run of capitals holds one.
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_CAPITAL_PREFIXES = {"GH": "GH[POUSR]_", "GL": "GL[A-Z]{1,5}[_-]", "HOOK": "HOOKS?[./]"}
_CAPITALS = _Lazy(
    "|".join(
        # each led by its first character and only then "not after a capital or a digit": a search skips to
        # where one of the first characters stands (a pattern led by a lookbehind is tried at every place)
        prefix[0] + f"(?<![A-Z0-9]{prefix[0]})" + prefix[1:]
        for prefix in sorted(
            {
                _CAPITAL_PREFIXES.get(lit.upper(), re.escape(lit.upper()))
                for rule in _TOKENS
                for lit in rule[0]
                if lit.upper() != lit
            },
            key=len,
            reverse=True,
        )
    )
)
_AWS_ID = _Lazy(r"A(?<![A-Z0-9]A)(?:KIA|SIA)[A-Z0-9]{16}(?![A-Z0-9])")
_AWS_SECRET_NEAR = _Lazy(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{40}(?![A-Za-z0-9+/=])")

# Every token above has a run of at least 20 characters from [A-Za-z0-9_+/=-]. Such runs are found in a byte
# view of the text where those characters are "a" and all others " " (one translate and a C-speed find), and
# the rules run only in a window around each run: prose has no such run, code a few hundred per MB.
_RUN_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+/=-")
_RUN_VIEW = bytes(ord("a") if b in _RUN_CHARS else ord(" ") for b in range(256))
_RUN = b"a" * 20
_WINDOW_MARGIN = 64
_COUNT_AFTER = 1000
# ... except Entra ID client secrets, whose 34 characters may be broken up by "." and "~": searched everywhere
_EVERYWHERE = tuple(rule for rule in _TOKENS if rule[0][0] == "Q~")
_IN_WINDOWS = tuple(rule for rule in _TOKENS if rule[0][0] != "Q~")

# -- private keys ------------------------------------------------------------------------------------------
_PEM_BEGIN = _Lazy(r"-----BEGIN ([A-Z0-9 ]{0,40})PRIVATE KEY( BLOCK)?-----")
_KEY_ESCAPED = _Lazy(r"(?:\\[rn]|[A-Za-z0-9+/=])*")  # a key inside a JSON string: "\nMIIE...\n"
_PEM_PUBLIC = _Lazy(r"-----(BEGIN|END) (?:CERTIFICATE|PUBLIC KEY|[A-Z0-9 ]{0,20}PUBLIC KEY BLOCK)-----")
# Lines that end in a run of base64, found in the reversed text (so each line costs one look at its end):
# newline, then backwards: optional blanks, closing punctuation, "=" padding and the run itself.
_KEY_TAIL_SOURCE = (
    r"\n\r?[ \t]*[;,'\"]{0,2}(?P<b>={0,2}[A-Za-z0-9+/]{16,100})(?![A-Za-z0-9+/])"
    # ... and before it on its line (read backwards) nothing but indentation, a quote, a diff marker, a
    # read_file ("12|"), cat -n ("12<tab>") or grep ("path:12:") prefix
    r"(?=[\"']?[ \t]*(?:[+-]|[|\t][0-9]{1,9}|[:|][0-9]{1,9}[:|][^\s:|]{0,200})?[ \t]*(?:\n|\Z))"
)
_KEY_TAIL = _Lazy(_KEY_TAIL_SOURCE)
# The same over the lower-cased ASCII bytes (see ``_key_lines``): it finds every line the text pattern finds
# and maybe a few more (a non-ASCII blank is "?" there, not a blank), so each of its lines is checked again.
_KEY_TAIL_BYTES = _Lazy(_KEY_TAIL_SOURCE.encode("ascii"))
# what may stand before the run on its line: indentation, a quote, a diff marker, a read_file, cat -n or grep
# prefix
_KEY_BODY_LINE = _Lazy(
    r"[ \t]*(?:[0-9]{1,9}[|\t]|[^\s:|]{0,200}[:|][0-9]{1,9}[:|])?[ \t]*(?:[A-Za-z0-9+/=]*|[A-Z][A-Za-z]{1,20}(?:-[A-Z][A-Za-z]{1,20})*: [^\n]*)\r?"
)
_KEY_LINE_MIN, _KEY_LINE_MAX = 60, 76  # PEM bodies wrap at 64, OpenSSH at 70, PGP armour at 64

# -- keyword-led rules, run on the lower-cased text (bytes) ----------------------------------------------------
_URL_PASSWORD = _Lazy(r"://[^\s:/@\"'<>]{0,128}:([^\s@/\"'<>]{1,256})@")
_PORT_THEN_FRAGMENT = _Lazy(r"[0-9]{1,5}[?#]")  # http://127.0.0.1:8080#@example.com: a port, then a fragment
_CREDENTIAL = rb"([a-z0-9._~+/=-]{8,})"
_KEYWORD_RULES: tuple[tuple[bytes, _Lazy[bytes], bool], ...] = (
    (b"bearer", _Lazy(rb"bearer(?<![a-z0-9_]bearer)[ \t]+" + _CREDENTIAL), True),
    (b"basic", _Lazy(rb"basic(?<![a-z0-9_]basic)[ \t]+" + _CREDENTIAL), True),
    (
        b"authorization",
        _Lazy(
            rb"authorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:(?:token|bot|digest|negotiate)[ \t]+)?"
            + _CREDENTIAL
        ),
        True,
    ),
    (b"-u", _Lazy(rb"-(?<![\w-]-)(?:u|-user)[ \t]+['\"]?[^\s:'\"]{1,128}:([^\s'\"]{3,})"), False),
    (
        b"-",
        _Lazy(
            rb"-(?<![\w-]-)-?(?:password|passwd|pass|token|api-key|apikey|secret|client-secret|auth-token|"
            rb"access-token)(?:=|[ \t]+)['\"]?([^\s'\"]{3,})"
        ),
        False,
    ),
    (b"sshpass", _Lazy(rb"sshpass[ \t]+-p[ \t]*['\"]?([^\s'\"]+)"), False),
    (b"mysql", _Lazy(rb"mysql[a-z]*(?![a-z0-9_])[^\n|;&]{0,200}?[ \t]-p([^\s'\"-][^\s'\"]*)"), False),
    (
        b"mariadb",
        _Lazy(rb"mariadb[a-z-]*(?![a-z0-9_])[^\n|;&]{0,200}?[ \t]-p([^\s'\"-][^\s'\"]*)"),
        False,
    ),
    (b"identified", _Lazy(rb"identified[ \t]+by[ \t]+'([^'\n]{4,})'"), False),
    (b"password '", _Lazy(rb"password[ \t]+'([^'\n]{4,})'"), False),
    (b"sig", _Lazy(rb"sig(?<=[?&;-]sig)(?:nature)?=([^&\s\"'<>#]{4,})"), False),
)

# a character each keyword rule needs besides its word (one memchr spares the search for the word)
_KEYWORD_GATES = (b"", b"", b"", b"-", b"-", b"-", b"-", b"-", b"'", b"'", b"=")
# ... and words one of which every match holds (its keyword, or what must follow it): see ``_Triggers``
_KEYWORD_NEEDS: tuple[tuple[bytes, ...], ...] = (
    (b"bearer",),
    (b"basic",),
    (b"authorization",),
    (b"-u ", b"-u\t", b"--user"),
    (b"-pass", b"-token", b"-api-key", b"-apikey", b"-secret"),
    (b"sshpass",),
    (b"mysql",),
    (b"mariadb",),
    (b"identified",),
    (b"password '",),
    (b"sig=", b"signature="),
)
# ... and the word every match starts with, where there is one (the pattern is tried only where it stands)
_KEYWORD_STARTS = (
    b"bearer", b"basic", b"authorization", b"", b"", b"sshpass", b"mysql", b"mariadb", b"identified", b"password", b"",
)  # fmt: skip
# Names whose value is a secret: the name, lower-cased with "_", "-" and "." removed, ends with one of these.
_SECRET_SUFFIXES = (
    "password", "passwd", "passphrase", "secret", "token", "credential", "credentials", "authorization",
    "pwd", "apikey", "secretkey", "privatekey", "accesskey", "signingkey", "encryptionkey", "masterkey",
    "authkey", "licensekey", "sessionkey", "accountkey", "clientkey", "appkey", "adminkey", "servicekey",
    "subscriptionkey", "consumerkey", "hmackey", "jwtkey", "sastoken",
)  # fmt: skip
_WEAK_LAST_WORDS = frozenset({"pass", "cookie"})  # secret only with a qualifier: db_pass, session_cookie
_WEAK_ENDINGS = tuple(_WEAK_LAST_WORDS)
_NOT_SECRET_PASS = (
    "bypass",
    "compass",
    "overpass",
    "underpass",
    "trespass",
    "surpass",
    "encompass",
    "impass",
)
_NOT_SECRET_TOKEN_KINDS = frozenset(
    ("max", "num", "total", "input", "output", "prompt", "completion", "cached", "reasoning", "bos", "eos", "pad",
     "unk", "sep", "cls", "mask", "next", "page", "continuation", "cancellation", "start", "end", "stop",
     "special", "new", "last", "first", "sync")
)  # fmt: skip
_NAME_START = _Lazy(rb"[^a-z0-9_.\-]")
_WORDS = _Lazy(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
# "<keyword><more name> = " in the lower-cased text: the assignments worth a closer look
_ASSIGNED = tuple(
    (
        keyword.encode(),
        _Lazy(
            keyword.encode()
            + rb"[a-z0-9_.\-]{0,80}(?P<cq>[\"'`]?)\]?[ \t]*(?P<sep>:=|=(?![=>~])|:(?![:/=]))[ \t]*"
        ),
    )
    for keyword in ("pass", "pwd", "secret", "token", "key", "credential", "auth")
)
_VALUE = _Lazy(
    r"(?P<pre>[rRbBuUfF]{0,2})(?=[\"'`])"
    r"(?:\"\"\"(?P<tdq>(?:[^\"\\]|\\.|\"(?!\"\")){0,2000})\"\"\"|'''(?P<tsq>(?:[^'\\]|\\.|'(?!'')){0,2000})'''|"
    r"\"(?P<dq>(?:[^\"\\\n]|\\.){0,2000})\"|'(?P<sq>(?:[^'\\\n]|\\.){0,2000})'|`(?P<bq>[^`\n]{0,2000})`)"
    r"|(?P<bare>[^\s\"'`,;&)}\]]{1,2000})"
)
# YAML: a tag or an anchor before the value (password: !!str s3cret, password: &pw s3cret), and a block scalar
# (password: | or >-) whose indented lines follow
_YAML_DECORATION = _Lazy(r"(?:[!&][^\s]{0,100}[ \t]+)+")
_YAML_BLOCK = _Lazy(r"[|>][+-]?[1-9]?[+-]?[ \t]*(?:#[^\n]*)?(?=\r?\n)")
_YAML_BLOCK_LINE = _Lazy(r"\r?\n([ \t]*)([^\n]*)")
_IDENTIFIER = _Lazy(r"[A-Za-z_$][A-Za-z0-9_$]*")
_DOTTED = _Lazy(r"[A-Za-z_$][A-Za-z0-9_$]*(?:\??\.[A-Za-z_$][A-Za-z0-9_$]*)+[!?]?")
_CODE_WORDS = frozenset(
    ("none", "null", "nil", "undefined", "true", "false", "yes", "no", "on", "off", "str", "string", "int",
     "integer", "bytes", "bool", "boolean", "float", "number", "dict", "list", "object", "any", "optional",
     "secretstr", "secretbytes", "self", "this", "cls")
)  # fmt: skip
_PLACEHOLDER = _Lazy(
    r"^(?:[$%{<\[(!&*?:@#]|\.\.\.|x{3,}|\*{3,}|_{3,}|-{3,})|\.\.\.|xxxx|<[^>]*>|\{\{|\$\{|"
    r"^(?:your|enter|insert|put|replace|example|sample|dummy|fake|placeholder|changeme|change_me|change-me|"
    r"redacted|secret|password|passwd|token|apikey|api_key|api-key|test|testing|todo|fixme|default|none|null|"
    r"empty|string|bearer|basic|digest|bot|negotiate)(?:$|[-_ .])|^(?:true|false|yes|no|on|off|include|omit|"
    r"same-origin|enabled|disabled|required|optional)$|_here$|-here$|(?:^|[-_. ])(?:your|example|placeholder)(?:$|[-_. ])",
    re.I,
)
_ENV_NAME_VALUE = _Lazy(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_LINE_PREFIX = _Lazy(r"[ \t]*(?:export[ \t]+|-[ \t]+|set[ \t]+)?\Z")
_TYPE_NAME = _Lazy(r"(?:[A-Z][a-z]{2,}[0-9]*)+")  # Credentials, SecretStr, Int64: a type annotation
_BASE64ISH = _Lazy(r"[A-Za-z0-9+/=_-]+")
_HEX = _Lazy(r"(?:0[xX])?[0-9a-fA-F]+")
_PROSE_WORD = _Lazy(r"[A-Za-z][a-z]*(?:[-.'][a-z]+)*[.,;:!?)]*")
_NUMBER = _Lazy(r"[-+]?(?:0x[0-9a-fA-F]+|[0-9][0-9_]*(?:\.[0-9]+)?)")


# the ASCII characters that are not letters or digits, deleted by a translate (``_alnum``)
_NOT_ALNUM = str.maketrans("", "", "".join(chr(c) for c in range(128) if not chr(c).isalnum()))


def _alnum(text: str) -> str:
    """``text`` lower-cased, its letters and digits only."""
    low = text.lower()
    return low.translate(_NOT_ALNUM) if low.isascii() else "".join(ch for ch in low if ch.isalnum())


def _secret_name(name: str) -> bool:
    joined = _alnum(name)
    if not joined.endswith(_SECRET_SUFFIXES):
        # (in an ASCII name the last word is the end of ``joined``: a weak one must end it)
        if name.isascii() and not joined.endswith(_WEAK_ENDINGS):
            return False
        words = [w.lower() for w in _WORDS.get().findall(name)]
        if len(words) < 2 or words[-1] not in _WEAK_LAST_WORDS:
            return False
        return not joined.endswith(_NOT_SECRET_PASS)
    if joined.endswith("token"):
        words = [w.lower() for w in _WORDS.get().findall(name)]
        if len(words) >= 2 and words[-1] == "token" and words[-2] in _NOT_SECRET_TOKEN_KINDS:
            return False
    return joined not in ("pwd", "oldpwd") and not joined.endswith(_NOT_SECRET_PASS)


def _literal_secret(value: str) -> bool:
    """A literal that could be a secret (not a placeholder, a template, a path or an env var name)."""
    if len(value) < 4 or value.strip() != value or _PLACEHOLDER.get().search(value):
        return False
    if value.startswith(("/", "./", "../", "~/", "http://", "https://")) and "@" not in value:
        return False
    return _ENV_NAME_VALUE.get().fullmatch(value) is None


def _bare_secret(value: str, config: bool, colon: bool) -> bool:
    """An unquoted value: a literal secret, or code (a call, subscript, attribute, variable, type)?

    ``config``: the assignment stands alone on its line in a config style (``NAME=value``, ``name: value``)
    or in a query or connection string; only there is a plain word a literal."""
    if "(" in value or "[" in value or "{" in value or value.lower().rstrip("!?") in _CODE_WORDS:
        return False
    if _NUMBER.get().fullmatch(value) or _DOTTED.get().fullmatch(value) or not _literal_secret(value):
        return False
    if _IDENTIFIER.get().fullmatch(value):
        if _generated(value):
            return True  # no one names a variable like this: a key
        # a word: a variable in code; in a config file a literal, unless it reads as a type annotation
        return config and not (colon and _TYPE_NAME.get().fullmatch(value))
    # not a name: a literal in a config file; in code only a long base64-like run (a key pasted unquoted)
    return (
        config
        or _generated(value)
        or (len(value) >= 16 and _mixed(value) and _BASE64ISH.get().fullmatch(value) is not None)
    )


def _generated(value: str) -> bool:
    """Machine-made: 16+ characters with digits and both cases that change class at about every other
    character (random text does, CamelCase names such as Ed25519PrivateKey do not)."""
    if len(value) < 16 or not _random(value):
        return False
    kinds = ["d" if c.isdigit() else "u" if c.isupper() else "l" if c.islower() else "s" for c in value]
    changes = sum(a != b for a, b in itertools.pairwise(kinds))
    return changes >= 0.45 * (len(value) - 1)


def _names_itself(name: str, value: str) -> bool:
    """``CLIENT_AUTH: "clientAuth"``: the value is the name again (a label or an id), not a secret."""

    return _alnum(value) == _alnum(name.rpartition(".")[2])


def _config_style(text: str, start: int, name_quote: str, value_end: int, tight: bool, colon: bool) -> bool:
    """Whether ``name = value`` at ``start`` is a line of a config file (see ``_bare_secret``)."""
    if name_quote in ("?", "&", ";"):
        return True
    if name_quote or not (colon or tight):
        return False
    line_start = text.rfind("\n", 0, start) + 1
    if _LINE_PREFIX.get().match(text, line_start, start) is None:
        return False
    line_end = text.find("\n", value_end)
    rest = text[value_end : line_end if line_end >= 0 else len(text)].strip()
    return not rest or rest.startswith(("#", ";", "&&", "\\"))


def _assignments(text: str, low: bytes, spans: list[Span], triggers: _Triggers) -> None:
    """Values assigned to secret-looking names (see ``_secret_name``) that are literals, not code."""
    seen: set[int] = set()
    for keyword, assigned in _ASSIGNED:
        if (
            keyword not in triggers.present
        ):  # (a plain search is faster than the pattern's own when it finds none)
            continue
        for after in _matches(assigned.get(), low, triggers.where(keyword)):
            end = after.start("cq")
            if end in seen:
                continue
            seen.add(end)
            hit = after.start()
            cut = _NAME_START.get().search(low[max(0, hit - 80) : hit][::-1])
            start = hit - (cut.start() if cut else min(hit, 80))
            name = text[start:end].strip(".-")
            if not name or not _secret_name(name):
                continue
            opened = text[start - 1] if start else ""
            closing = after.group("cq").decode()
            if closing and closing != opened:
                continue
            at = after.end()
            if after.group("sep") == b":" and text.startswith(("!", "&", "|", ">"), at):
                decoration = _YAML_DECORATION.get().match(text, at)
                at = decoration.end() if decoration else at
                block = _YAML_BLOCK.get().match(text, at)
                if block is not None:
                    _yaml_block(text, start, block.end(), spans)
                    continue
            value = _VALUE.get().match(text, at)
            if value is None:
                continue
            for group in ("tdq", "tsq", "dq", "sq", "bq"):
                literal = value.group(group)
                if literal is not None:
                    template = "{" in literal and ("f" in (value.group("pre") or "").lower() or group == "bq")
                    if not template and _literal_secret(literal) and not _names_itself(name, literal):
                        spans.append(value.span(group))
                    break
            else:
                colon = after.group("sep") == b":"
                tight = after.start("sep") == end and after.end() == after.end("sep")
                quote = opened if opened in ('"', "'", "`", "?", "&", ";") else ""
                line_pos = start - 1 if quote in ('"', "'", "`") else start
                config = _config_style(text, line_pos, quote, value.end(), tight, colon)
                if _bare_secret(value.group("bare"), config, colon):
                    spans.append(value.span("bare"))


def _yaml_block(text: str, name_at: int, block_end: int, spans: list[Span]) -> None:
    """The lines of a YAML block scalar (``password: |`` then its indented lines) assigned to a secret name."""
    line_start = text.rfind("\n", 0, name_at) + 1
    lead = text[line_start:name_at]
    indent = len(lead) - len(lead.lstrip(" \t-"))
    lines: list[Span] = []
    pos = block_end
    while True:
        line = _YAML_BLOCK_LINE.get().match(text, pos)
        if line is None:
            break
        body = line.group(2).rstrip()
        if body and len(line.group(1)) <= indent:
            break  # back at the name's level: the block ended
        if body:
            lines.append((line.start(2), line.start(2) + len(body)))
        pos = line.end()
    first = text[lines[0][0] : lines[0][1]] if lines else ""
    if first and _literal_secret(first) and ": " not in first and not first.startswith(("{", "[", "- ")):
        spans.extend(lines)  # (a mapping or a list in the lines after is YAML, not the value of a block)


# netrc: machine HOST [login USER] [account A] [port P] password PASSWORD, on one line or over several
_NETRC_ENTRY = (
    rb"(?P<more>(?:[ \t\r\n]+(?:login|account|port)[ \t\r\n]+[^\s]{1,256}){0,3})"
    rb"[ \t\r\n]+password[ \t\r\n]+(?P<pw>[^\s]{1,256})"
)
_NETRC = (
    _Lazy(rb"machine(?<![a-z0-9_.-]machine)[ \t\r\n]+[^\s]{1,256}" + _NETRC_ENTRY),
    _Lazy(rb"default(?<![a-z0-9_.-]default)" + _NETRC_ENTRY),
)


def _netrc(text: str, low: bytes, spans: list[Span]) -> None:
    """Passwords in netrc entries (``~/.netrc``, ``_netrc``: curl's, git's and ftp's credentials)."""
    for m in itertools.chain.from_iterable(rule.get().finditer(low) for rule in _NETRC):
        value = text[m.start("pw") : m.end("pw")]
        if len(value) < 4 or _PLACEHOLDER.get().search(value):
            continue
        if b"login" not in m.group("more") and _PROSE_WORD.get().fullmatch(value):
            continue  # "by default password authentication is...": prose, unless a login makes it an entry
        spans.append(m.span("pw"))


# XML: <password>...</password>, <entry key="api.token">...</entry>, <add key="DbPassword" value="..."/>
_XML_ELEMENT = _Lazy(
    rb"<([a-z_][a-z0-9_.:-]{0,80})((?:[ \t][^<>\n]{0,500})?)>[ \t]*([^<\n]{1,2000}?)[ \t]*</\1[ \t]*>"
)
_XML_NAMED = tuple(  # key="..." and name="...", each led by its literal (an alternation is scanned slowly)
    _Lazy(word + rb"(?<![a-z0-9_.:-]" + word + rb")[ \t]*=[ \t]*([\"'])([^\"'<>\n]{1,100})\1")
    for word in (b"key", b"name")
)
_XML_VALUE = _Lazy(rb"[ \t]+value[ \t]*=[ \t]*([\"'])([^\"'<>\n]{0,2000})\1")


def _xml(text: str, low: bytes, spans: list[Span], triggers: _Triggers) -> None:
    """Secrets in XML (and HTML) elements and name/value attribute pairs whose name says secret."""
    if _has(low, b"</", 0):
        for m in _XML_ELEMENT.get().finditer(low):
            name = text[m.start(1) : m.end(1)].rpartition(":")[2]
            if not _secret_name(name):
                named = next(
                    (n for r in _XML_NAMED if (n := r.get().search(low, m.start(2), m.end(2)))), None
                )
                name = text[named.start(2) : named.end(2)] if named else ""
            value = text[m.start(3) : m.end(3)]
            if name and _secret_name(name) and _literal_secret(value) and not _names_itself(name, value):
                spans.append(m.span(3))
    if b"value" in triggers.present:
        key_rule, name_rule = (rule.get() for rule in _XML_NAMED)
        keys = _matches(key_rule, low, triggers.where(b"key"))
        for named in itertools.chain(keys, name_rule.finditer(low)):
            found = _XML_VALUE.get().match(low, named.end())
            if found is None:
                continue
            name = text[named.start(2) : named.end(2)]
            value = text[found.start(2) : found.end(2)]
            if _secret_name(name) and _literal_secret(value) and not _names_itself(name, value):
                spans.append(found.span(2))


def _key_lines(text: str, low: bytes, spans: list[Span]) -> None:
    """Base64 lines of a private key shown without its BEGIN line (a page of a key, a key printed by line).

    The lines are found in the reversed bytes ``low`` (a byte per character: reversing and scanning them
    costs less than the text's when it holds a character beyond Latin-1), then each one is matched again in
    its own line of the text, so the verdicts are the text pattern's."""
    size = len(text)
    found: list[tuple[int, int]] = []  # forward (start, end) of the run on each candidate line
    tail = _KEY_TAIL.get()
    for m in _KEY_TAIL_BYTES.get().finditer(b"\n" + low[::-1]):
        line_end = size - m.start()  # the newline that ends the line (or the end of the text)
        line_start = text.rfind("\n", 0, line_end) + 1
        again = tail.match("\n" + text[line_start:line_end][::-1])
        if again is not None:
            found.append((line_end - again.end("b") + 1, line_end - again.start("b") + 1))
    found.reverse()
    previous = -2  # the newline ending the last full-width key line
    for start, end in found:
        body = text[start:end]
        random = _random(body) and not _HEX.get().fullmatch(body)  # a hex constant is no base64 key line
        full = _KEY_LINE_MIN <= len(body.rstrip("=")) <= _KEY_LINE_MAX
        # a full-width line is key material on its own; a shorter one only as the line right after one
        follows = previous >= 0 and text.rfind("\n", 0, start) == previous
        if not full and not follows:  # or right before an END line
            line_end = text.find("\n", end)
            follows = line_end >= 0 and text.startswith(
                "-----END ", text.find("-----", line_end, line_end + 40)
            )
        if random and (full or follows):
            spans.append((start, end))
        previous = text.find("\n", end) if random and full else -2


def _pem_blocks(text: str, spans: list[Span]) -> None:
    """The body of every private key block: the lines after its BEGIN line while they are key material
    (base64, a "Name: value" header or blank, after any read_file or grep prefix), so the END line, the end
    of a cut-off key, or code that merely names the BEGIN marker ends it; or, in a JSON string, the
    escaped lines."""
    size = len(text)
    for begin in _PEM_BEGIN.get().finditer(text):
        stop = pos = begin.end()
        if text.startswith("\\n", pos):
            escaped = _KEY_ESCAPED.get().match(text, pos)
            if escaped is not None:
                stop = escaped.end()
        else:
            while pos < size:
                line_end = text.find("\n", pos + 1)
                line_end = size if line_end < 0 else line_end
                if not _KEY_BODY_LINE.get().fullmatch(text, pos + (text[pos] == "\n"), line_end):
                    break
                stop = pos = line_end
        if stop - begin.end() >= 16:
            spans.append((begin.end(), stop))


def _public_blocks(text: str) -> list[Span]:
    """Certificate and public key blocks: their base64 lines are not secrets."""
    out: list[Span] = []
    opened = -1
    for m in _PEM_PUBLIC.get().finditer(text):
        if m.group(1) == "BEGIN":
            opened = m.end()
        elif opened >= 0:
            out.append((opened, m.start()))
            opened = -1
    return out


# -- environment values ------------------------------------------------------------------------------------
_ENV_SECRET = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|PRIVATE|SESSION|COOKIE|API|DSN|PASS", re.I
)
_ENV_NOT_SECRET = re.compile(
    r"(_PATH|_FILE|_DIR|_SOCK|_HOME|_PID|_ID|_REGION|_USER|_NAME|_HOST|_PORT|_TYPE|_MODE|_URL|_ENDPOINT)$|"
    r"^SSH_AUTH_SOCK$|PASSTHROUGH|^XDG_SESSION",
    re.I,
)
_ENV_DATA = getattr(os.environ, "_data", None)
_env_keys: tuple[object, ...] | None = None  # the environment's names when the forms were computed
_env_checks: tuple[tuple[object, object], ...] = ()
_env_forms: tuple[str, ...] = ()


def _as_str(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return str(value)


def _forms(value: str) -> Iterable[str]:
    """A secret as it may appear: plain, reversed, hex, base64 (standard and URL-safe, padding dropped so a
    padded copy is found too)."""
    import base64

    raw = value.encode("utf-8", "surrogateescape")
    yield value
    yield value[::-1]
    yield raw.hex()
    yield raw.hex().upper()
    yield base64.b64encode(raw).decode("ascii").rstrip("=")
    yield base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _env_secrets() -> tuple[str, ...]:
    """The forms of secret-looking environment values; recomputed only when the environment changed."""
    global _env_keys, _env_checks, _env_forms
    data = _ENV_DATA if isinstance(_ENV_DATA, dict) else dict(os.environ)
    keys = tuple(data)  # a new secret may come in as another variable goes: the size alone cannot tell
    if keys == _env_keys:
        get = data.get
        for k, v in _env_checks:
            if get(k) is not v:
                break
        else:
            return _env_forms
    found: list[tuple[object, object]] = []
    forms: set[str] = set()
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
            forms.update(f for f in _forms(value) if len(f) >= _MIN_SECRET)
    _env_keys = keys
    _env_checks = tuple(found)
    _env_forms = tuple(sorted(forms, key=len, reverse=True))
    return _env_forms


# -- which trigger words a text holds ---------------------------------------------------------------------------
# The words the passes below ask the lower-cased text for before they run (``word in low``), and the keywords
# whose places ``_assignments`` tries its pattern at. Each such search is a pass over the text (20-30 us per
# 38 KB page, ~30 of them per text), so all are found in one pass of an Aho-Corasick automaton (ahocorasick-rs,
# SIMD-accelerated: ~25 us per page) when it is installed. Words of three characters at least: a shorter one
# makes the automaton's SIMD prefilter stop at many more places.
_TRIGGERS: frozenset[bytes] = frozenset(
    {word for needs in _KEYWORD_NEEDS for word in needs}
    | {keyword for keyword, _ in _ASSIGNED}
    | {word for word in _KEYWORD_STARTS if word}
    | {b"password", b"machine", b"default", b"value", b"://", b"-----begin", b"kia", b"sia"}
)


def _offsets(found: bytes, word: bytes) -> tuple[int, ...]:
    """Where inside an occurrence of ``found`` an occurrence of ``word`` can start (so that a search that
    reports matches that do not overlap passes over it)."""
    if found == word:
        return ()
    return tuple(k for k in range(len(found)) if found[k : k + len(word)] == word[: len(found) - k])


_ahocorasick: Any = None  # the ahocorasick_rs module; False when it is not installed (or switched off)
_ONE_PASS_MIN = 2048  # in a shorter text the plain searches cost less than building the one pass's answer
_DENSE = 1024  # a word standing more often than once in this many characters: its pattern's own search
# a place where the one pass may have passed a word over costs as much to check as a search of this many
# characters: where there are more such places than the text is long over this, a search of its own
_CHECK_COST = 1000  # (measured: 200 and 3000 cost more on 1 MB of prose or of code)


class _Words:
    """Words found in one pass over bytes (an Aho-Corasick automaton, built on first use), and per word the
    words whose reported match may hide it, with the offsets at which it may start there (see ``_Triggers``)."""

    __slots__ = ("_automaton", "hiders", "words")

    def __init__(self, words: Iterable[bytes]) -> None:
        # longest first: of the words that match at one place, the longest is reported
        self.words = tuple(sorted(set(words), key=lambda word: (-len(word), word)))
        self.hiders: dict[bytes, tuple[tuple[bytes, tuple[int, ...]], ...]] = {}  # made with the automaton
        self._automaton: Any = None

    def reported(self, data: bytes) -> dict[bytes, list[int]] | None:
        """Where the words stand in ``data`` as one pass reports them: leftmost first, never overlapping;
        None without ahocorasick-rs."""
        global _ahocorasick
        if _ahocorasick is None:
            try:
                import ahocorasick_rs
            except ImportError:
                _ahocorasick = False
            else:
                _ahocorasick = ahocorasick_rs
        if _ahocorasick is False or len(data) < _ONE_PASS_MIN:
            return None
        if self._automaton is None:  # (made on first use: a few ms that a process's start need not pay)
            self.hiders = {
                word: tuple((found, at) for found in self.words if (at := _offsets(found, word)))
                for word in self.words
            }
            self._automaton = _ahocorasick.BytesAhoCorasick(
                list(self.words), matchkind=_ahocorasick.MATCHKIND_LEFTMOST_FIRST
            )
        places: list[list[int]] = [[] for _ in self.words]
        for i, start, _ in self._automaton.find_matches_as_indexes(data):
            places[i].append(start)
        return {word: at for word, at in zip(self.words, places, strict=True) if at}


_TRIGGER_WORDS = _Words(_TRIGGERS)


def _matches(pattern: re.Pattern[bytes], data: bytes, places: list[int] | None) -> Iterable[re.Match[bytes]]:
    """``pattern.finditer(data)`` for a pattern whose every match starts with a word found at ``places`` (every
    place of it, ascending; None: not known): tried only there, each search going on after the last match."""
    if places is None or len(places) * _DENSE > len(data):  # (the search's own scan costs less then)
        return pattern.finditer(data)
    return _matches_at(pattern, data, places)


def _matches_at(pattern: re.Pattern[bytes], data: bytes, places: list[int]) -> Iterator[re.Match[bytes]]:
    end = 0
    for at in places:
        if at >= end and (m := pattern.match(data, at)) is not None:
            yield m
            end = m.end()


class _Triggers:
    """The words of a ``_Words`` in bytes: ``word in triggers.present`` is exactly ``word in data`` for each of
    them, and ``where(word)`` every place of one, both answered from one pass for all of them.

    That pass reports the leftmost match and goes on after its end, so an occurrence it passed over starts
    inside a reported match (of another word that agrees with it where they overlap, see ``_Words``):
    those few places are checked one by one. Without the pass (not installed, or a short text) ``present`` is
    the data itself, searched for each word on its own."""

    __slots__ = ("_data", "_hiders", "_reported", "present")

    def __init__(self, data: bytes, words: _Words = _TRIGGER_WORDS) -> None:
        self._data = data
        self._reported = reported = words.reported(data)
        self._hiders = words.hiders
        self.present: frozenset[bytes] | bytes = data
        if reported:
            self.present = frozenset(word for word in words.words if self._there(word, reported))
        elif reported is not None:  # a word anywhere makes the pass report something: none is there
            self.present = frozenset()

    def _checks(self, word: bytes, reported: dict[bytes, list[int]]) -> int:
        """How many places the one pass may have passed ``word`` over."""
        return sum(len(reported.get(hider, ())) * len(offsets) for hider, offsets in self._hiders[word])

    def _there(self, word: bytes, reported: dict[bytes, list[int]]) -> bool:
        if word in reported:
            return True
        data = self._data
        if self._checks(word, reported) * _CHECK_COST > len(data):
            return word in data
        for hider, offsets in self._hiders[word]:
            for at in reported.get(hider, ()):
                for k in offsets:
                    if data.startswith(word, at + k):
                        return True
        return False

    def where(self, word: bytes) -> list[int] | None:
        """Every place of ``word`` (one of the set) in ascending order; None without the one pass, or where
        it stands so often (see ``_DENSE``) that a pattern's own search costs less than trying each place."""
        reported = self._reported
        data = self._data
        if reported is None or len(reported.get(word, ())) * _DENSE > len(data):
            return None
        if self._checks(word, reported) * _CHECK_COST > len(data):  # each place found by a search of its own
            if data.count(word) * _DENSE > len(data):
                return None
            places = []
            at = data.find(word)
            while at >= 0:
                places.append(at)
                at = data.find(word, at + 1)
            return places
        places = list(reported.get(word, ()))
        for hider, offsets in self._hiders[word]:
            for at in reported.get(hider, ()):
                places.extend(at + k for k in offsets if data.startswith(word, at + k))
        return sorted(set(places))


# -- the whole ------------------------------------------------------------------------------------------------


def _has(data: bytes, literal: bytes, rare: int) -> bool:
    """``literal in data``, looked for where its rare character ``literal[rare]`` stands (each found with a
    memchr) while those places are few: a search for the whole literal costs a slow pass when it is absent."""
    char = literal[rare : rare + 1]
    at = data.find(char, rare)
    for _ in range(32):
        if at < 0:
            return False
        if data.startswith(literal, at - rare):
            return True
        at = data.find(char, at + 1)
    return data.find(literal, at - rare) >= 0


def _rare(literal: str) -> str:
    """The literal's first character that is not a letter, or "" (found with one memchr when absent)."""
    return next((c for c in literal if not c.isalpha()), "")


# per rule, the characters one of which the text must hold for the rule to match ("": no gate): the first
# character of a literal that is not a letter, or for the literals of letters only, one the pattern needs
_NEEDS = {"gh": "_", "gl": "-", "xox": "-", "hook": "/", "eyJ": ".", "SharedAccess": "=", "shp": "_"}
_GATES = {id(rule): frozenset(_NEEDS.get(lit, _rare(lit)) for lit in rule[0]) for rule in _TOKENS}


# The token rules' literals of three characters or more, found in one pass over the bytes of the text the
# rules run over (the shorter ones, a few, are searched for on their own)
_LITERALS = {id(rule): tuple((lit.encode("ascii"), len(lit) >= 3) for lit in rule[0]) for rule in _TOKENS}
_TOKEN_WORDS = _Words(lit for literals in _LITERALS.values() for lit, one_pass in literals if one_pass)


def _tokens(text: str, rules: Iterable[_TokenRule], spans: list[Span], start: int = 0, end: int = -1) -> None:
    end = len(text) if end < 0 else end
    present: dict[str, bool] = {"": True}
    # (``text`` and its ASCII bytes hold an ASCII literal at the same places)
    data = text[start:end].encode("ascii", "replace")
    found = _Triggers(data, _TOKEN_WORDS).present  # (the short literals are searched for in ``data``)
    for rule in rules:
        _, pattern, group, check = rule
        for gate in _GATES[id(rule)]:  # a single-character search runs at memchr speed, a literal's does not
            seen = present.get(gate)
            if seen is None:
                seen = present[gate] = text.find(gate, start, end) >= 0
            if seen:
                break
        else:
            continue
        if any(literal in (found if one_pass else data) for literal, one_pass in _LITERALS[id(rule)]):
            for m in pattern.get().finditer(text, start, end):
                if check is None or check(m.group(group)):
                    spans.append(m.span(group))


def _token_windows(text: str, low: bytes, spans: list[Span], regions: list[Span]) -> str:
    """Run the token rules around every long run of token characters (see ``_RUN_VIEW``); return the text
    they ran over (the joined windows, or ``text`` itself), where every such run stands, and set
    ``regions`` to the windows (or to the whole text).

    The windows are joined (one newline apart, which no token pattern matches) and each rule runs once over
    the joined text, its matches mapped back: the cost is one pass per rule, not one Python step per rule and
    window. A match needs a run of 20 token characters near its start, and each window begins 64 characters
    before its first run, so no match begins where a lookbehind could look across a joint.
    """
    view = low.translate(_RUN_VIEW)
    size = len(view)
    windows: list[tuple[int, int]] = []
    window_start = window_end = -1
    covered, half = 0, size // 2
    # Where 20-character blocks of runs (``view.count(_RUN)``) are so many that their windows would cover
    # most of the text (random text), one pass over the whole costs less. They are counted run by run while
    # the windows are made (a run of n characters holds n // 20), which spares a count of the whole view (a
    # search for a repeated character is slow); the rest is counted at once after _COUNT_AFTER runs, or as
    # soon as the runs so far are that dense (after a few, so that one long run at the start is no sign).
    blocks, per_block, counting = 0, len(_RUN) + 2 * _WINDOW_MARGIN, _COUNT_AFTER
    at = view.find(_RUN)
    while at >= 0:
        run_end = view.find(b" ", at)
        run_end = size if run_end < 0 else run_end
        if counting:
            counting -= 1
            blocks += (run_end - at) // len(_RUN)
            if not counting or (counting < _COUNT_AFTER - 32 and blocks * per_block > run_end):
                blocks += view.count(_RUN, run_end)
                counting = 0
            if blocks * per_block > size:
                _tokens(text, _IN_WINDOWS, spans)
                regions[:] = [(0, size)]
                return text
        if window_start >= 0 and at - _WINDOW_MARGIN <= window_end:
            window_end = min(size, run_end + _WINDOW_MARGIN)
        else:
            if window_start >= 0:
                windows.append((window_start, window_end))
                covered += window_end - window_start
                if covered > half:  # mostly runs (random text): one pass over the whole costs less
                    _tokens(text, _IN_WINDOWS, spans)
                    regions[:] = [(0, size)]
                    return text
            window_start, window_end = max(0, at - _WINDOW_MARGIN), min(size, run_end + _WINDOW_MARGIN)
        at = view.find(_RUN, run_end)
    if window_start >= 0:
        windows.append((window_start, window_end))
    regions[:] = windows
    if not windows:
        return ""
    if len(windows) == 1:
        _tokens(text, _IN_WINDOWS, spans, *windows[0])
        return text[windows[0][0] : windows[0][1]]
    joined = "\n".join([text[a:b] for a, b in windows])
    offsets: list[int] = []  # where each window starts in ``joined``
    shift: list[int] = []  # what to add to a position in ``joined`` to get its position in ``text``
    pos = 0
    for a, b in windows:
        offsets.append(pos)
        shift.append(a - pos)
        pos += b - a + 1
    found: list[Span] = []
    _tokens(joined, _IN_WINDOWS, found)
    for start, end in found:
        i = bisect.bisect_right(offsets, start) - 1
        if end <= offsets[i] + windows[i][1] - windows[i][0]:  # never across a joint
            spans.append((start + shift[i], end + shift[i]))
    return joined


def _every(data: AnyStr, form: AnyStr, spans: list[Span]) -> None:
    """Every place of ``form`` in ``data``, one after another."""
    at = data.find(form)
    while at >= 0:
        spans.append((at, at + len(form)))
        at = data.find(form, at + len(form))


def _collect(text: str, raw: bytes, regions: list[Span] | None = None) -> list[Span]:
    """Every secret's span in ``text`` (``raw``: ``text.encode("ascii", "replace")``); ``regions`` is set to
    where the runs of 20 token characters are (see ``_token_windows``).

    Whether a literal is there at all is asked of ``raw`` (a byte per character, offsets the text's): a
    text with one character beyond Latin-1 holds two bytes per character, and each search of it costs
    more (20-200% in a profile of this project's code)."""
    low = raw.lower()  # lower-cased, one byte per character (others are "?"), offsets aligned
    triggers = _Triggers(low)
    present = triggers.present
    spans: list[Span] = []
    for form in _env_secrets():
        if form.isascii() and "?" not in form:  # found at the same places in the bytes, for less
            _every(raw, form.encode("ascii"), spans)
        else:
            _every(text, form, spans)
    if _has(raw, b"Q~", 1):
        _tokens(text, _EVERYWHERE, spans)
    windows: list[Span] = [] if regions is None else regions
    runs = _token_windows(text, low, spans, windows)
    # an AWS key id is a run of 20 token characters: it stands in the windows, if anywhere
    if (
        ((b"kia" in present and b"KIA" in raw) or (b"sia" in present and b"SIA" in raw))
        if runs is text
        else ("KIA" in runs or "SIA" in runs)
    ):
        for m in _AWS_ID.get().finditer(text):
            near = _AWS_SECRET_NEAR.get().search(text, m.end(), m.end() + 200)
            if near is not None and _random(near.group()):
                spans.append(near.span())
    public: list[Span] = []
    if b"-----begin" in present and b"-----BEGIN" in raw:
        _pem_blocks(text, spans)
        public = _public_blocks(text)
    before = len(spans)
    # A key line of 20 base64 characters or more is a run of token characters (so a window), and a shorter
    # one counts only after a full-width one or right before an END line: without either, prose, most pages,
    # there is none, and the scan of every line's end is spared.
    if windows or b"-----END " in raw:
        _key_lines(text, low, spans)
    if public:
        spans[before:] = [s for s in spans[before:] if not any(a <= s[0] < b for a, b in public)]
    if b"://" in present:
        urls = _URL_PASSWORD.get().finditer(text)
        _add(spans, (m for m in urls if not _PORT_THEN_FRAGMENT.get().match(text, m.start(1))), text, False)
    for (_, keyword_rule, credential), gate, needs, start in zip(
        _KEYWORD_RULES, _KEYWORD_GATES, _KEYWORD_NEEDS, _KEYWORD_STARTS, strict=True
    ):
        if gate not in low:
            continue
        for word in needs:  # (the pattern's own search costs more than these when they find none)
            if word in present:
                break
        else:
            continue
        places = triggers.where(start) if start else None
        _add(spans, _matches(keyword_rule.get(), low, places), text, credential)
    _assignments(text, low, spans, triggers)
    if b"password" in present and (b"machine" in present or b"default" in present):
        _netrc(text, low, spans)
    if b"<" in low:
        _xml(text, low, spans, triggers)
    return spans


def _add(spans: list[Span], matches: Iterable[re.Match[Any]], text: str, credential: bool) -> None:
    """Spans of group 1 (found in the lower-cased text, read back from ``text``) that are no placeholder and
    no word of prose ("--password options", "Basic authentication."); after Bearer/Basic/Authorization the
    credential must also hold a digit or mixed case."""
    for m in matches:
        value = text[m.start(1) : m.end(1)]
        if (
            _PLACEHOLDER.get().search(value)
            or _PROSE_WORD.get().fullmatch(value)
            or _DOTTED.get().fullmatch(value)
        ):
            continue
        if credential and not (any(c.isdigit() for c in value) or value.lower() != value != value.upper()):
            continue
        spans.append(m.span(1))


def redact(text: str) -> str:
    """Return ``text`` with secrets replaced by ``[REDACTED]`` (non-str input is converted with ``str``)."""
    if not isinstance(text, str):
        text = str(text)
    if len(text) < _MIN_SECRET:
        return text
    raw = text.encode("ascii", "replace")
    regions: list[Span] = []
    spans = _collect(text, raw, regions)
    # %-encoded, invisible, fullwidth, in capitals (a key in capitals is a run of token characters)
    for form in undisguised(text, raw, _CAPITALS.get(), regions):
        found: list[Span] = []
        if form.tokens_only:
            _tokens(form.text, _TOKENS, found)
        else:  # and a key in capitals that an invisible character broke up
            found = _collect(form.text, form.text.encode("ascii", "replace"))
            _tokens(form.text.translate(_ASCII_LOWER), _TOKENS, found)
        for start, end in found:
            span = form.span(start, end)
            if span is not None:
                spans.append(span)
    if not spans:
        return text
    spans.sort()
    out: list[str] = []
    pos = 0
    for start, end in spans:
        if end <= pos:
            continue
        if start >= pos:
            out.append(text[pos:start])
            out.append(MASK)
        pos = end
    out.append(text[pos:])
    return "".join(out)
