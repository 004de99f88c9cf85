"""The redactor against secrets written as an attacker (or an odd config format) would write them: names and keys in
capitals or with an invisible character inside, fullwidth names, percent-encoded names, values and keys, netrc
entries, YAML block scalars and tags, XML elements and attributes, TOML triple-quoted strings; and the look-alikes
that must stay (a URL whose port is followed by a fragment). Ordinary code stays byte for byte.

Every secret here is made up by the test; none is real.
"""

from __future__ import annotations

import os
import random
import re
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_core.security import redact

SECRET = "Zx8Kq2LmPp0vXyT7"
KEY = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123456789"
ZW = "\u200b"

DISGUISED = [
    # key names in capitals and with invisible characters inside
    (f"MY_SERVICE_PASSWORD={SECRET}", SECRET),
    (f"X-API-KEY: {SECRET}", SECRET),
    (f"DB_PASS{ZW}WORD={SECRET}", SECRET),
    (f"db_pass\u200dword: {SECRET}", SECRET),
    (f"pass\ufeffword = '{SECRET}'", SECRET),
    (f"API_\u00adKEY={SECRET}", SECRET),
    (f"\uff30\uff21\uff33\uff33\uff37\uff2f\uff32\uff24={SECRET}", SECRET),  # fullwidth PASSWORD
    # provider keys in capitals (lossless for hex keys) and with invisible characters inside
    (KEY.upper(), KEY.upper()),
    ("GHP_0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ", "GHP_0123456789ABCDEF"),
    ("PUL-" + "ABCDEF0123456789" * 2 + "ABCDEF01", "ABCDEF0123456789ABCDEF"),
    (f"{KEY[:12]}{ZW}{KEY[12:]} tail", KEY[12:]),
    (f"gh{ZW}p_0123456789abcdefghijklmnopqrstuvwxyzAB", "0123456789abcdefghij"),
    # netrc, on one line and over several
    (f"machine api.example.com login bob password {SECRET}", SECRET),
    (f"machine api.example.com\n  login bob\n  password {SECRET}\n", SECRET),
    ("default login anonymous password hunter2hunter2", "hunter2hunter2"),
    (f"machine git.example.com password {SECRET} login bob", SECRET),
    # YAML: block scalars, tags, anchors
    (f"database:\n  password: >-\n    {SECRET}\n  user: app\n", SECRET),
    (f"database:\n  password: |\n    {SECRET}\n    and a second line\n", "and a second line"),
    (f"password: !!str {SECRET}", SECRET),
    (f"password: &pw {SECRET}", SECRET),
    # XML and HTML
    (f"<password>{SECRET}</password>", SECRET),
    (f"<Password> {SECRET} </Password>", SECRET),
    (f"<ns:apiToken>{SECRET}</ns:apiToken>", SECRET),
    (f'<add key="DbPassword" value="{SECRET}"/>', SECRET),
    (f"<property name='password' value='{SECRET}'/>", SECRET),
    (f'<entry key="api.token">{SECRET}</entry>', SECRET),
    (f'<input type="password" name="password" value="{SECRET}">', SECRET),
    # TOML (and Python) triple-quoted strings
    (f"[database]\npassword = '''{SECRET}'''", SECRET),
    (f'password = """{SECRET}"""', SECRET),
    # percent-encoded names, values and keys
    (f"password%3D{SECRET}", SECRET),
    (f"data=user%3Dbob%26password%3D{SECRET}&next=1", SECRET),
    (f"pass%77ord={SECRET}", SECRET),
    (f"%70%61%73%73%77%6f%72%64={SECRET}", SECRET),
    ("sk%2Dproj%2DAbCdEfGhIjKlMnOpQrStUvWx0123456789", "AbCdEfGhIjKlMnOp"),
    ("https://user:p%40ssw0rd%21x@example.com/", "p%40ssw0rd"),
]


@pytest.mark.parametrize(("text", "secret"), DISGUISED)
def test_disguised_secrets_are_removed(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out and secret not in out.replace(ZW, ""), out
    assert "[REDACTED]" in out


def test_only_the_secret_goes_and_the_rest_stays_exactly() -> None:
    assert redact(f"data=user%3Dbob%26password%3D{SECRET}&next=1") == (
        "data=user%3Dbob%26password%3D[REDACTED]&next=1"
    )
    assert redact(f"x pass{ZW}word={SECRET} y") == f"x pass{ZW}word=[REDACTED] y"
    assert redact(f"call {KEY.upper()} now") == "call [REDACTED] now"
    assert redact(f"<entry key='api.token'>{SECRET}</entry>") == "<entry key='api.token'>[REDACTED]</entry>"
    assert redact(f"a:\n  password: |\n    {SECRET}\n  user: bob\n") == (
        "a:\n  password: |\n    [REDACTED]\n  user: bob\n"
    )


KEPT = [
    "http://127.0.0.1:8080#@example.com",  # host 127.0.0.1, port 8080, fragment "@example.com": no password
    "http://127.0.0.1:8080?@example.com",
    "http://localhost:3000/#/@user",
    "By default password authentication is disabled.",
    "machine learning needs a default password policy",
    "machine api.example.com login bob password ${NETRC_PASSWORD}",
    "<password>${DB_PASSWORD}</password>",
    "<password>...</password>",
    '<input type="password" name="password" value="">',
    '<input name="password" value="{{ form.password }}">',
    "password: |\n  secretKeyRef: {name: api, key: token}\n",
    "password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n",
    "progress: 50%25 done, %2F is a slash",
    "CONSTANT_NAMES_IN_CAPITALS_ARE_FINE = 1",
    "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
    "\u4f60\u597d\uff0c\u4e16\u754c\uff1a\u5bc6\u7801\u8bbe\u7f6e",  # CJK prose with fullwidth punctuation
]


@pytest.mark.parametrize("text", KEPT)
def test_lookalikes_stay(text: str) -> None:
    assert redact(text) == text


@settings(max_examples=150, deadline=None)
@given(
    line=st.sampled_from([t for t, _ in DISGUISED if t.isascii() and "%" not in t]),
    cuts=st.lists(st.integers(min_value=0, max_value=200), min_size=1, max_size=3),
    char=st.sampled_from(["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"]),
)
def test_invisible_characters_anywhere_hide_nothing(line: str, cuts: list[int], char: str) -> None:
    """An invisible character put anywhere in a line that holds a secret (inside its name, inside the secret)
    never lets the secret through."""
    secret = dict(DISGUISED)[line]
    text = line
    for cut in sorted({c % (len(line) + 1) for c in cuts}, reverse=True):
        text = text[:cut] + char + text[cut:]
    out = redact(text).replace(char, "")
    assert secret not in out, (text, out)


def _stdlib_sources() -> list[Path]:
    root = Path(os.__file__).parent
    return [
        f
        for f in sorted(root.glob("*.py")) + sorted(root.glob("[a-z]*/*.py"))
        if "test" not in f.parts[-2] and "site-packages" not in f.parts
    ]


LITERAL_PASSWORD = re.compile(r"passw(?:or)?d\s*=\s*'\[REDACTED\]'")


def test_the_standard_library_passes_through_byte_for_byte() -> None:
    """Ordinary code (Python's own library, ~10 MB) comes back exactly as it was, but for a password written as
    a literal in an example."""
    sources = _stdlib_sources()
    assert len(sources) > 300
    changed = []
    for path in sources:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        out = redact(text)
        if out != text:
            lines = [b for a, b in zip(text.splitlines(), out.splitlines(), strict=True) if a != b]
            changed += [(path.name, line) for line in lines if not LITERAL_PASSWORD.search(line)]
    assert changed == []


def test_random_text_is_left_alone() -> None:
    rng = random.Random(27)
    letters = "".join(rng.choice(string.ascii_letters + "     \n") for _ in range(200_000))
    run = "".join(rng.choice(string.ascii_lowercase) for _ in range(200_000))
    assert redact(letters) == letters and redact(run) == run
