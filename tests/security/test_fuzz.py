"""Hostile input for all three guards: never a crash, never a hang; unparseable commands are dangerous."""

from __future__ import annotations

import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_core.security import CommandVerdict, MalformedPathError, check_path, classify_command, redact

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
