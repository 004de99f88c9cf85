"""Approvers (terminal through real pipes, callback, headless), the grant store and the gate."""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hermes_core.security import (
    ApprovalGate,
    ApprovalPolicy,
    ApprovalRequest,
    ApprovalStore,
    CallbackApprover,
    HeadlessApprover,
    TerminalApprover,
    check_path,
    classify_command,
)

REQ = ApprovalRequest("command", "rm -r build/", "deletes a directory", tool_name="terminal", session_id="s1")


def _pipe_with(text: str | None) -> io.TextIOWrapper:
    read_fd, write_fd = os.pipe()
    if text is not None:
        os.write(write_fd, text.encode())
        os.close(write_fd)
    else:
        _pipe_with.keep = write_fd  # type: ignore[attr-defined]
    return os.fdopen(read_fd, "r")


@pytest.mark.parametrize(
    ("typed", "answer"), [("o\n", "once"), ("session\n", "session"), ("A\n", "always"), ("d\n", "deny")]
)
def test_terminal_answers_through_a_pipe(typed: str, answer: str) -> None:
    out = io.StringIO()
    with _pipe_with(typed) as stdin:
        assert TerminalApprover(timeout=5, input=stdin, output=out).approve(REQ) == answer
    shown = out.getvalue()
    assert "rm -r build/" in shown and "deletes a directory" in shown
    assert "[o]nce / [s]ession / [a]lways / [d]eny" in shown
    assert "[O]" not in shown and "(default" not in shown


def test_terminal_timeout_denies() -> None:
    out = io.StringIO()
    stdin = _pipe_with(None)
    t0 = time.monotonic()
    try:
        assert TerminalApprover(timeout=0.3, input=stdin, output=out).approve(REQ) == "deny"
    finally:
        stdin.close()
        os.close(_pipe_with.keep)  # type: ignore[attr-defined]
    assert time.monotonic() - t0 < 3
    assert "no answer in time" in out.getvalue()


def test_terminal_preselects_nothing() -> None:
    out = io.StringIO()
    with _pipe_with("\nmaybe\n") as stdin:
        assert TerminalApprover(timeout=5, input=stdin, output=out).approve(REQ) == "deny"
    assert out.getvalue().count("Allow?") == 3


def test_terminal_retries_after_bad_answer_with_stringio() -> None:
    out = io.StringIO()
    assert (
        TerminalApprover(timeout=5, input=io.StringIO("yes please\ns\n"), output=out).approve(REQ)
        == "session"
    )
    assert "please answer" in out.getvalue()


def test_terminal_in_a_real_subprocess() -> None:
    code = (
        "from hermes_core.security import TerminalApprover, ApprovalRequest\n"
        "import sys\n"
        "r = ApprovalRequest('command', 'git push -f origin main', 'force push')\n"
        "print(TerminalApprover(timeout=5).approve(r))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], input="a\n", capture_output=True, text=True, timeout=60
    )
    assert proc.stdout.strip() == "always"
    assert "git push -f origin main" in proc.stderr


def test_callback_approver_sync_async_and_bools() -> None:
    assert CallbackApprover(lambda r: True).approve(REQ) == "once"
    assert CallbackApprover(lambda r: False).approve(REQ) == "deny"
    assert CallbackApprover(lambda r: "Session").approve(REQ) == "session"
    assert CallbackApprover(lambda r: "whatever").approve(REQ) == "deny"

    async def async_cb(request: ApprovalRequest) -> str:
        await asyncio.sleep(0)
        return "always" if request.subject == "rm -r build/" else "deny"

    assert CallbackApprover(async_cb).approve(REQ) == "always"

    async def inside_loop() -> str:
        return CallbackApprover(async_cb).approve(REQ)

    assert asyncio.run(inside_loop()) == "always"


def test_async_callback_timeout_denies_through_gate(tmp_path: Path) -> None:
    async def slow(request: ApprovalRequest) -> str:
        await asyncio.sleep(10)
        return "once"

    gate = ApprovalGate(CallbackApprover(slow, timeout=0.2), ApprovalStore(None), ApprovalPolicy())
    t0 = time.monotonic()
    assert gate.check(REQ) is False
    assert time.monotonic() - t0 < 5


def test_headless_denies() -> None:
    assert HeadlessApprover().approve(REQ) == "deny"
    assert ApprovalGate(HeadlessApprover(), ApprovalStore(None)).check(REQ) is False


def test_gate_binds_to_exact_subject_and_session() -> None:
    asked: list[ApprovalRequest] = []

    def cb(request: ApprovalRequest) -> str:
        asked.append(request)
        return "session"

    gate = ApprovalGate(CallbackApprover(cb), ApprovalStore(None), ApprovalPolicy())
    assert gate.check(REQ)
    assert gate.check(REQ)
    assert len(asked) == 1
    other = ApprovalRequest("command", "rm -r build2/", "deletes a directory", session_id="s1")
    assert gate.check(other) and len(asked) == 2
    other_session = ApprovalRequest("command", "rm -r build/", "x", session_id="s2")
    assert gate.check(other_session) and len(asked) == 3
    as_path = ApprovalRequest("path", "rm -r build/", "x", session_id="s1")
    assert gate.check(as_path) and len(asked) == 4


def test_once_remembers_nothing() -> None:
    answers = iter(["once", "deny"])
    gate = ApprovalGate(CallbackApprover(lambda r: next(answers)), ApprovalStore(None))
    assert gate.check(REQ) is True
    assert gate.check(REQ) is False


def test_hardline_never_asks() -> None:
    asked: list[ApprovalRequest] = []
    gate = ApprovalGate(CallbackApprover(lambda r: asked.append(r) or "always"), ApprovalStore(None))
    verdict = classify_command("rm -rf /")
    req = ApprovalRequest("command", verdict.normalized, verdict.reason)
    assert gate.check(req, hardline=verdict.hardline) is False
    assert asked == []


def test_approver_exception_denies() -> None:
    def boom(request: ApprovalRequest) -> str:
        raise RuntimeError("ui crashed")

    assert ApprovalGate(CallbackApprover(boom), ApprovalStore(None)).check(REQ) is False


def test_always_is_persisted_readably_and_keeps_comments(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text(
        '# my settings\n[tools]\nenabled = ["hermes-cli"]  # keep me\n\n[approvals]\n# who may run what\ndangerous_commands = true\n'
    )
    gate = ApprovalGate(CallbackApprover(lambda r: "always"), ApprovalStore(cfg))
    assert gate.check(REQ)
    text = cfg.read_text()
    assert "# my settings" in text and "# keep me" in text and "# who may run what" in text
    assert 'enabled = ["hermes-cli"]' in text and "dangerous_commands = true" in text
    assert 'kind = "command"' in text and 'subject = "rm -r build/"' in text and "added = " in text

    fresh = ApprovalStore(cfg)
    assert fresh.is_granted(REQ)
    assert not fresh.is_granted(ApprovalRequest("command", "rm -r build", "x"))

    # a person deletes the line by hand: the grant is gone
    lines = [line for line in text.splitlines() if "rm -r build/" not in line]
    cfg.write_text("\n".join(lines) + "\n")
    assert not fresh.is_granted(REQ)
    import tomllib

    assert tomllib.loads(cfg.read_text())["approvals"]["dangerous_commands"] is True


def test_always_without_file_lasts_the_session() -> None:
    store = ApprovalStore(None)
    store.grant(REQ, "always")
    assert store.is_granted(REQ)


def test_policy_defaults_and_config(tmp_path: Path) -> None:
    policy = ApprovalPolicy.from_config(None)
    assert policy.command_needs_approval(classify_command("git push -f origin main"))
    assert not policy.command_needs_approval(classify_command("ls"))
    ws = tmp_path / "ws"
    ws.mkdir()
    outside_write = check_path(tmp_path.parent / "x.txt", "write", ws)
    assert policy.requires_path_approval("write", check_path(ws / ".git" / "config", "write", ws))
    assert not policy.requires_path_approval("read", check_path(ws / ".env", "read", ws))
    assert not policy.requires_path_approval("write", check_path(ws / "a.txt", "write", ws))
    relaxed = ApprovalPolicy.from_config(
        {"dangerous_commands": False, "write_ask_paths": False, "tools": ["deploy"]}
    )
    assert not relaxed.command_needs_approval(classify_command("git push -f origin main"))
    assert not relaxed.requires_path_approval("write", check_path(ws / ".git" / "config", "write", ws))
    assert relaxed.tool_needs_approval("deploy") and not policy.tool_needs_approval("deploy")
    assert outside_write.decision in ("allow", "ask")
