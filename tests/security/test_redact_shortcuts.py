"""The redactor's shortcuts give the verdicts of the full search, on both sides of each shortcut.

It decides much from a byte per character (``text.encode("ascii", "replace")``: every character beyond ASCII
is a "?") and looks for keys only around long runs of token characters; each shortcut gives up past a bound
(non-ASCII characters looked at one by one, "~" looked at one by one, runs counted one by one) and then the
full search runs. Each case below is run where the shortcut holds and past its bound, in ASCII text and in
text with a character beyond Latin-1 (two bytes per character). Every secret is made up by the test.
"""

from __future__ import annotations

import random
import string

import pytest

from hermes_core.security import redact

B64 = string.ascii_letters + string.digits + "+/"
ALNUM = string.ascii_letters + string.digits
rng = random.Random(2727)


def _r(n: int, alphabet: str = ALNUM) -> str:
    while True:  # a digit, a capital and a small letter, as generated keys have
        value = "".join(rng.choice(alphabet) for _ in range(n))
        if (
            any(c.isdigit() for c in value)
            and any(c.isupper() for c in value)
            and any(c.islower() for c in value)
        ):
            return value


AWS_ID = "AKIA" + "".join(rng.choice(string.ascii_uppercase + "234567") for _ in range(16))
AWS_SECRET = _r(40, B64)
ENTRA = _r(3) + "8Q~" + _r(34, ALNUM + "_~.-")
CAPITALS_KEY = "SK-PROJ-" + "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(40))
KEY_LINE = _r(64, B64)
PASSWORD = _r(16)

SECRETS = [
    (f"User,{AWS_ID},{AWS_SECRET}", AWS_SECRET),  # an AWS secret next to its key id
    (f"tenant,{ENTRA},end", ENTRA[6:]),  # Entra ID (searched everywhere, not only in runs), no name
    (f"call {CAPITALS_KEY} now", CAPITALS_KEY[8:]),  # a key in capitals, no name
    (f"db_pass\u200bword = '{PASSWORD}'", PASSWORD),  # an invisible character inside the name
    (f"keys/r\u00e9sum\u00e9.pem:12:{KEY_LINE}", KEY_LINE),  # a grep hit, a path beyond ASCII
    (f"    {KEY_LINE}", KEY_LINE),  # a key line alone
]

# code-like filler (no run of 20 token characters), random letters (runs everywhere: one pass over the whole),
# many runs (past the count of runs one by one), many "~", many characters beyond ASCII
CODE = "def handle(request, timeout=30):\n    return fetch(request.url, timeout)\n"
RUNS = "".join(f"value_{i}_is_a_long_identifier_name = {i}\n" for i in range(1200))
FILLERS = {
    "code": CODE * 40,
    "random letters": "".join(rng.choice(string.ascii_letters + "     \n") for _ in range(60_000)),
    "many runs": RUNS,
    "many tildes": "path = '~/x' ~ y\n" * 100,
    "latin-1": "caf\u00e9 na\u00efve " * 800 + "\n",
    "beyond latin-1": "a \u2014 b \u201cquoted\u201d \u2192 c\n" * 600,
}


@pytest.mark.parametrize("filler", FILLERS, ids=list(FILLERS))
@pytest.mark.parametrize(("line", "secret"), SECRETS)
def test_secrets_are_found_on_both_sides_of_every_shortcut(filler: str, line: str, secret: str) -> None:
    before = FILLERS[filler]
    text = before + "\n" + line + "\n" + before
    out = redact(text)
    assert secret not in out, (filler, line)
    # and the filler comes back exactly as it was
    assert out.startswith(before + "\n") and out.endswith("\n" + before)


@pytest.mark.parametrize("filler", FILLERS, ids=list(FILLERS))
def test_fillers_stay_byte_for_byte(filler: str) -> None:
    text = FILLERS[filler]
    assert redact(text) == text


@pytest.mark.parametrize("blank", [" ", "\u00a0", "\u3000", "\x1c"])
def test_a_blank_in_a_grep_path_reads_the_same_ascii_or_not(blank: str) -> None:
    """A grep prefix is a path without blanks: with a blank in it (ASCII or not) the line is no grep hit, so
    the base64 after it is judged as text after a word, and stays. The byte form sees a non-ASCII blank as
    "?" (no blank); the verdict is still the text's."""
    for prefix in ("", "x \u2014 y\n"):
        text = f"{prefix}my{blank}keys.pem:12:{KEY_LINE}"
        assert redact(text) == text
        ascii_path = f"{prefix}mykeys.pem:12:{KEY_LINE}"
        assert KEY_LINE not in redact(ascii_path)


def test_invisible_characters_past_the_one_by_one_bound() -> None:
    """More characters beyond ASCII than are looked at one by one: the full search still finds the
    invisible character inside the name, and a fullwidth name."""
    many = "\u00e9" * 5000 + "\n"
    for line in (
        f"DB_PASS\u200bWORD={PASSWORD}",
        f"\uff30\uff21\uff33\uff33\uff37\uff2f\uff32\uff24={PASSWORD}",
    ):
        out = redact(many + line + "\n" + many)
        assert PASSWORD not in out and out.startswith(many)


def test_an_environment_secret_with_a_question_mark(monkeypatch: pytest.MonkeyPatch) -> None:
    """Environment values are looked for in the byte form when they are ASCII, where every character beyond
    ASCII is a "?": a value holding a "?" is looked for in the text, so another character in its place is no
    match."""
    value = "Qz7?Lm2Kp9Xw4Rt8"
    monkeypatch.setenv("HERMES_TEST_SHORTCUT_API_KEY", value)
    for filler in ("", "a \u2014 b\n"):
        assert redact(f"{filler}got {value} back") == f"{filler}got [REDACTED] back"
        other = value.replace("?", "\u00e9")
        assert redact(f"{filler}got {other} back") == f"{filler}got {other} back"
