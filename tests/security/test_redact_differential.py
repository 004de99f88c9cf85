"""The redactor against its frozen previous self (``redact_oracle``): byte for byte the same output on
generated text with secrets, secret-looking names, disguises and near misses spliced in, on the corpus files,
on read_file-like numbered pages of this project's code, and on the fake secrets of ``test_redact``.

Speed work on ``hermes_core/security/_redact.py`` (prefilters that let passes skip a text) must never change a
verdict: any difference here is a secret missed or a line altered that was not before."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
import redact_oracle
from hypothesis import given, settings
from hypothesis import strategies as st
from test_redact import SECRETS, fake_secrets
from test_redact_forms import DISGUISED

from hermes_core.security import _redact, redact

ROOT = Path(__file__).resolve().parents[2]

# pieces that make the rules look closer: keywords, separators, prefixes of keys, markers, disguises
FRAGMENTS = [
    "password", "passwd", "pass", "pwd", "secret", "token", "key", "credential", "auth", "authorization",
    "Bearer ", "Basic ", "bearer", "basic", "sshpass -p ", "mysql -u root -p", "mariadb -p", "IDENTIFIED BY '",
    "PASSWORD '", "?sig=", "&signature=", "--password ", "-u user:", "--token=", " = ", "=", ": ", ":=", '"', "'",
    "`", "\n", "\t", " ", "  ", "machine ", " login ", " password ", "default ", "<password>", "</password>",
    '<add key="DbPassword" value="', '"/>', "<entry key=\"api.token\">", "</entry>", "://", "user:", "@", "#",
    "-----BEGIN RSA PRIVATE KEY-----\n", "-----END RSA PRIVATE KEY-----", "-----BEGIN CERTIFICATE-----\n",
    "%3D", "%2D", "\u200b", "\u00ad", "\uff21", "SK-PROJ-", "GHP_", "AKIA", "KIA", "SIA", "sk-", "ghp_", "glpat-",
    "xoxb-", "eyJ", "AIza", "Q~", "hooks.slack.com/services/", "AccountKey=", "|", ">-", "!!str ", "&pw ",
    "export ", "- ", "None", "os.environ['X']", "${VAR}", "<your-key>", "changeme", "f\"{x}\"", '"""', "'''",
]  # fmt: skip
KEYISH = string.ascii_letters + string.digits + "_-+/="


def _numbered(text: str, first: int = 1, mark: str = "|") -> str:
    """``text`` as read_file shows it (``     1|line``), or ``cat -n`` (``mark="\\t"``)."""
    return "\n".join(f"{n:6d}{mark}{line}" for n, line in enumerate(text.split("\n"), first))


_SOURCES = sorted((ROOT / "hermes_core" / "security").glob("*.py"))
_CODE_LINES = [line for f in _SOURCES for line in f.read_text("utf-8").split("\n")]
_SAMPLES = [text for text, _ in SECRETS] + [text for text, _ in DISGUISED]
_SAMPLES += [line for line, _ in fake_secrets(7)]

piece = st.one_of(
    st.sampled_from(FRAGMENTS),
    st.sampled_from(_SAMPLES),
    st.sampled_from(_CODE_LINES),
    st.text(KEYISH, min_size=1, max_size=70),
    st.text(string.printable, max_size=30),
    st.text(max_size=8),
)


def _same(text: str) -> None:
    """The same output as the oracle's as used (the one pass over texts of 2 KB and more, when ahocorasick-rs
    is installed), with the one pass over every text (words it may have passed over checked place by place,
    then searched for on their own), and with the plain searches that stand in for it."""
    expected = redact_oracle.redact(text)
    assert redact(text) == expected
    saved = _redact._ahocorasick, _redact._ONE_PASS_MIN, _redact._CHECK_COST
    try:
        _redact._ONE_PASS_MIN = 0
        assert redact(text) == expected
        _redact._CHECK_COST = 1 << 40  # (words the pass may have passed over: searched for on their own)
        assert redact(text) == expected
        _redact._ahocorasick = False
        assert redact(text) == expected
    finally:
        _redact._ahocorasick, _redact._ONE_PASS_MIN, _redact._CHECK_COST = saved


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=40), st.text(KEYISH + ".", max_size=40), st.sampled_from(FRAGMENTS)))
def test_secret_names_judged_as_before(name: str) -> None:
    assert _redact._secret_name(name) == redact_oracle._redact._secret_name(name)
    assert _redact._names_itself(name, name.upper()) == redact_oracle._redact._names_itself(
        name, name.upper()
    )


def test_the_one_pass_is_used_where_it_is_installed() -> None:
    pytest.importorskip("ahocorasick_rs")
    text = b"db_password = 'x'; sshpassword; -----begin".ljust(_redact._ONE_PASS_MIN)
    triggers = _redact._Triggers(text)
    assert triggers.where(b"pass") == [3, 22] and b"sshpass" in triggers.present
    assert b"pass" in triggers.present and b"mysql" not in triggers.present
    assert triggers.where(b"password") == [3, 22] and triggers.where(b"-----begin") == [32]


@settings(max_examples=400, deadline=None)
@given(st.lists(piece, max_size=40))
def test_generated_text_redacts_as_before(pieces: list[str]) -> None:
    _same("".join(pieces))


@settings(max_examples=100, deadline=None)
@given(st.lists(piece, max_size=60), st.integers(1, 99999), st.sampled_from(["|", "\t"]))
def test_generated_numbered_pages_redact_as_before(pieces: list[str], first: int, mark: str) -> None:
    _same(_numbered("".join(pieces), first, mark))


@pytest.mark.parametrize("path", _SOURCES, ids=lambda p: p.name)
def test_source_pages_redact_as_before(path: Path) -> None:
    text = path.read_text("utf-8")
    _same(text)
    _same(_numbered(text))
    _same(_numbered(text, mark="\t"))


@pytest.mark.parametrize(
    "path", sorted((Path(__file__).parent / "corpus").glob("*.txt")), ids=lambda p: p.name
)
def test_corpus_redacts_as_before(path: Path) -> None:
    text = path.read_text("utf-8")
    _same(text)
    for line in text.split("\n"):
        _same(line)


@pytest.mark.parametrize("seed", range(3))
def test_fake_secrets_redact_as_before(seed: int) -> None:
    lines = [line for line, _ in fake_secrets(seed)]
    for line in lines:
        _same(line)
    _same("\n".join(lines))
    _same(_numbered("\n".join(lines)))


def test_secret_environment_values_redact_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    value = "Zq8vLp2XkT4mNw9RjB7c"
    monkeypatch.setenv("DIFFERENTIAL_TEST_API_KEY", value)
    for text in (f"x {value} y", f"{value[::-1]}\n{value.encode().hex()}", _numbered(f"a = '{value}'")):
        _same(text)
