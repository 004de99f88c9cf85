"""hermes-audit through ``ToolSystem``: every call is recorded, chained, secret-free and mirrored."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import hermes_audit
import pytest
from audit_support import read_lines
from hermes_audit import canonical, verify_chain

from hermes_core import Block, ToolError, ToolRegistry, ToolSystem, hookimpl

SECRET = "sk-live-0123456789abcdef0123456789abcdef"


def _login(user: str, password: str) -> str:
    return f"welcome {user}"


def _fail(reason: str) -> str:
    raise ToolError(f"could not do it: {reason}")


class ToyTools:
    """Two tools, and a policy that blocks any call whose arguments contain ``forbidden``."""

    @hookimpl
    def register_tools(self, registry: ToolRegistry) -> None:
        registry.register(
            name="login",
            toolset="toy",
            schema={
                "name": "login",
                "description": "log in",
                "parameters": {
                    "type": "object",
                    "properties": {"user": {"type": "string"}, "password": {"type": "string"}},
                    "required": ["user", "password"],
                },
            },
            handler=_login,
        )
        registry.register(
            name="fail",
            toolset="toy",
            schema={
                "name": "fail",
                "description": "always fails",
                "parameters": {"type": "object", "properties": {"reason": {"type": "string"}}},
            },
            handler=_fail,
        )

    @hookimpl
    def pre_tool_call(self, arguments: dict[str, Any]) -> Block | None:
        return Block("forbidden argument") if "forbidden" in json.dumps(arguments) else None


@pytest.fixture
def home(hermes_home: Path) -> Path:
    """The shipped fixture's temporary HERMES_HOME (the audit trail goes below its data dir)."""
    return hermes_home


@pytest.fixture
def load(make_tool_system: Callable[..., ToolSystem]) -> Callable[..., ToolSystem]:
    """``load(section=None)``: a system with the toy tools and hermes-audit configured by ``section``."""

    def make(audit: dict[str, Any] | None = None) -> ToolSystem:
        config = {"plugins": {"audit": audit}} if audit is not None else None
        return make_tool_system(ToyTools(), hermes_audit, config=config)

    return make


def run_mixed_calls(system: ToolSystem) -> None:
    assert system.call("login", {"user": "ann", "password": SECRET}) == "welcome ann"
    assert system.call_outcome("fail", {"reason": SECRET}).status == "error"
    assert system.call_outcome("login", {"user": "forbidden", "password": SECRET}).status == "blocked"
    assert system.call_outcome("login", {"user": "ann"}).error_kind == "invalid_arguments"
    assert system.call_outcome("no_such_tool", {"password": SECRET}).error_kind == "unknown_tool"
    assert system.call("login", {"user": "bob", "password": "pw"}, session_id="s2") == "welcome bob"


def test_every_call_is_recorded_in_a_valid_chain(home: Path, load: Callable[..., ToolSystem]) -> None:
    with load() as system:
        run_mixed_calls(system)
    path = home / "data" / "audit" / "audit.jsonl"
    assert verify_chain(path) == (True, [])
    records = [json.loads(line) for line in read_lines(path)]
    summary = [(r["seq"], r["tool"], r["decision"], r["status"], r["error_kind"]) for r in records]
    assert summary == [
        (1, "login", "allowed", "ok", None),
        (2, "fail", "allowed", "error", "tool_error"),
        (3, "login", "blocked", "blocked", "blocked"),
        (4, "login", "rejected", "error", "invalid_arguments"),
        (5, "no_such_tool", "rejected", "error", "unknown_tool"),
        (6, "login", "allowed", "ok", None),
    ]
    first = records[0]
    assert first["toolset"] == "toy" and first["plugin"]
    assert first["result_chars"] == len("welcome ann") and first["duration_ms"] >= 0
    expected = hashlib.sha256(canonical({"user": "ann", "password": SECRET}).encode()).hexdigest()
    assert first["args_sha256"] == expected
    assert records[5]["session"] == "s2" and records[0]["session"] == "default"
    assert all(r["call_id"] for r in records)


def test_no_secret_reaches_the_file(home: Path, load: Callable[..., ToolSystem]) -> None:
    with load({"sqlite": True}) as system:
        run_mixed_calls(system)
    audit_dir = home / "data" / "audit"
    for file in audit_dir.iterdir():
        data = file.read_bytes()
        assert SECRET.encode() not in data, file
        assert b"could not do it" not in data and b"welcome" not in data, file


def test_custom_path_and_sqlite_mirror(home: Path, load: Callable[..., ToolSystem], tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "trail.jsonl"
    with load({"path": str(target), "sqlite": "trail.db"}) as system:
        run_mixed_calls(system)
    assert verify_chain(target) == (True, [])
    con = sqlite3.connect(home / "data" / "audit" / "trail.db")
    rows = con.execute("SELECT decision, count(*) FROM calls GROUP BY decision ORDER BY decision").fetchall()
    head = con.execute("SELECT hash FROM calls ORDER BY seq DESC LIMIT 1").fetchone()[0]
    con.close()
    assert rows == [("allowed", 3), ("blocked", 1), ("rejected", 2)]
    assert head == json.loads(read_lines(target)[-1])["hash"]


def test_two_systems_append_to_one_chain(home: Path, load: Callable[..., ToolSystem]) -> None:
    with load() as a, load() as b:
        for _ in range(3):
            a.call("login", {"user": "a", "password": "x"})
            b.call("login", {"user": "b", "password": "y"})
    ok, problems = verify_chain(home / "data" / "audit" / "audit.jsonl")
    assert ok, problems
    assert len(read_lines(home / "data" / "audit" / "audit.jsonl")) == 6


def test_disabled(home: Path, load: Callable[..., ToolSystem]) -> None:
    with load({"enabled": False}) as system:
        system.call("login", {"user": "a", "password": "x"})
    assert not (home / "data" / "audit").exists()


def test_one_writer_per_system_closed_with_it(home: Path, load: Callable[..., ToolSystem]) -> None:
    system = load()
    system.call("login", {"user": "a", "password": "x"})
    writer = system.stash("audit.writer", lambda: None)
    system.call("login", {"user": "b", "password": "y"})
    assert (
        isinstance(writer, hermes_audit.AuditWriter) and system.stash("audit.writer", lambda: None) is writer
    )
    system.close()
    with pytest.raises(ValueError, match="closed"):
        writer.append({"tool": "late"})


def test_a_malformed_section_is_logged_and_calls_still_run(
    home: Path, load: Callable[..., ToolSystem], caplog: pytest.LogCaptureFixture
) -> None:
    system = load({"colour": "blue"})
    assert system.call("login", {"user": "a", "password": "x"}) == "welcome a"  # an observer never blocks
    assert any("unknown key" in (r.exc_text or "") for r in caplog.records)


def test_entry_point_is_declared() -> None:
    eps = {ep.name: ep.value for ep in entry_points(group="hermes.tools")}
    assert eps.get("audit") == "hermes_audit"
