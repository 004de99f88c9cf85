"""Hostile input for all three guards: never a crash, never a hang; unparseable commands are dangerous."""

from __future__ import annotations

import random
import string
import time
from pathlib import Path

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from hermes_core.security import CommandVerdict, MalformedPathError, check_path, classify_command, redact

ALNUM = string.ascii_letters + string.digits
SHELLISH = st.text(alphabet=list("rm -f/~$(){}[]'\"`\\|&;<>*?!#=\n\tabcx01é\u200b"), max_size=200)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=300), SHELLISH))
def test_classify_never_crashes(cmd: str) -> None:
    t0 = time.perf_counter()
    verdict = classify_command(cmd)
    assert isinstance(verdict, CommandVerdict)
    assert "internal_error" not in verdict.categories, verdict.reasons
    assert time.perf_counter() - t0 < 2.0


@settings(max_examples=60, deadline=None)
@given(
    st.text(alphabet="abc -/", max_size=20),
    st.sampled_from(["'", '"', "`", "$(", "$'"]),
    st.text(alphabet="xyz ", max_size=10),
)
def test_unbalanced_quotes_are_dangerous(before: str, opener: str, after: str) -> None:
    verdict = classify_command("echo " + before + opener + after)
    assert verdict.dangerous and "unparseable" in verdict.categories


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["$(", "(", "{ ", "`", "${", "<(", "a|", "x;", "'"]), st.integers(100, 20000))
def test_huge_and_deep_inputs_are_bounded(unit: str, n: int) -> None:
    t0 = time.perf_counter()
    classify_command(unit * n)
    assert time.perf_counter() - t0 < 3.0


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=300), st.binary(max_size=100).map(lambda b: b.decode("latin-1"))))
def test_check_path_never_crashes(path: str) -> None:
    try:
        verdict = check_path(path, "write", Path("/tmp/hermes-fuzz-ws"))
    except MalformedPathError:
        return
    assert verdict.decision in ("allow", "ask", "refuse")


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=500), st.binary(max_size=200).map(lambda b: b.decode("latin-1"))))
def test_redact_never_crashes(text: str) -> None:
    out = redact(text)
    assert isinstance(out, str)
    assert redact(out) == out or "[REDACTED]" in out


@settings(max_examples=10, deadline=None)
@given(
    st.sampled_from(["a", "=", "-p", ":@", "sk-", "Bearer ", "x" * 15 + " "]), st.integers(10_000, 300_000)
)
def test_redact_huge_inputs(unit: str, n: int) -> None:
    t0 = time.perf_counter()
    redact(unit * n)
    assert time.perf_counter() - t0 < 5.0


# -- the redactor: code stays byte for byte, generated secrets go wherever they stand ------------------------

SECRET_NAMES = st.sampled_from(
    ["password", "api_key", "apiKey", "API_KEY", "client_secret", "token", "access_token", "db_password",
     "SECRET_KEY", "self.password", "authToken", "private_key", "credentials"]
)  # fmt: skip
CODE_VALUES = st.one_of(
    st.sampled_from(["None", "null", "undefined", "True", "str", "Optional[str]", "SecretStr", "''", '""']),
    st.from_regex(r"[a-z_][a-z0-9_]{0,12}\(\)", fullmatch=True),  # a call
    st.from_regex(r"[a-z_][a-z_]{0,10}\.[a-z_][a-z_]{0,10}", fullmatch=True),  # an attribute
    st.from_regex(r"[a-z_][a-z_]{0,10}\[\"[A-Z_]{1,12}\"\]", fullmatch=True),  # a subscript
    st.from_regex(r"[a-z_][a-z_]{0,14}", fullmatch=True),  # a variable
)
ASSIGNMENT_SHAPES = st.sampled_from(
    ["{n} = {v}", "{n}={v}", "    {n}: {v} = None", "f({n}={v})", "def f(x, {n}={v}):", "this.{n} = {v};",
     "const {n} = {v};", "{{'{n}': {v}}}", "{n}: {v},", "let {n} = {v}"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(SECRET_NAMES, CODE_VALUES, ASSIGNMENT_SHAPES)
def test_redact_leaves_code_assignments_alone(name: str, value: str, shape: str) -> None:
    # NAME=word alone on a line is how .env files and shells assign a literal: not code
    assume(not (shape == "{n}={v}" and value.isidentifier()))
    line = shape.format(n=name, v=value)
    assert redact(line) == line


TOKEN_SHAPES = st.sampled_from(
    [("sk-proj-", 48, ALNUM), ("sk-ant-api03-", 90, ALNUM + "-_"), ("ghp_", 36, ALNUM), ("glpat-", 20, ALNUM + "-_"),
     ("AKIA", 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"), ("AIza", 35, ALNUM + "-_"), ("hf_", 34, ALNUM),
     ("npm_", 36, ALNUM), ("sk_live_", 24, ALNUM), ("xoxb-123456789012-123456789012-", 24, ALNUM),
     ("SK", 32, "0123456789abcdef")]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    TOKEN_SHAPES,
    st.randoms(use_true_random=False),
    st.text(alphabet=list("abc XYZ=:'\"(,;\n\t{}[]#/"), max_size=40),
    st.text(alphabet=list("abc XYZ=:'\"),;\n\t{}[]#/."), max_size=40),
)
def test_redact_removes_a_token_wherever_it_stands(
    shape: tuple[str, int, str], rnd: random.Random, before: str, after: str
) -> None:
    prefix, size, alphabet = shape
    digits, letters = [c for c in alphabet if c.isdigit()], [c for c in alphabet if c.isalpha()]
    body = "".join(rnd.choice(alphabet) for _ in range(size - 2)) + rnd.choice(digits) + rnd.choice(letters)
    token = prefix + body
    out = redact(before + " " + token + " " + after)
    assert body not in out and "[REDACTED]" in out
