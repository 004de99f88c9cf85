"""Tools see the system through ``context.host`` (a narrow protocol), keep per-conversation state in
``context.session``, and a call may bring its own approver; ``system.guard`` is the public seam for the guard."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from hermes_core import CallContext, Host, RequireApproval, ToolSystem, hookimpl


def schema(name: str, **props: Any) -> dict[str, Any]:
    return {"name": name, "description": name, "parameters": {"type": "object", "properties": props}}


def test_the_host_is_narrow_and_forwards_to_its_system(tool_system: ToolSystem) -> None:
    seen: list[CallContext] = []

    def peek(context: CallContext) -> str:
        seen.append(context)
        return "ok"

    tool_system.registry.register(name="peek", toolset="t", schema=schema("peek"), handler=peek)
    assert tool_system.call("peek") == "ok"
    host = seen[0].host
    assert host is tool_system.host
    _typed: Host = host  # the adapter satisfies the protocol (mypy checks it)
    assert host.config is tool_system.config and host.workspace == tool_system.workspace
    assert host.tool("peek") is tool_system.registry.get("peek")
    for private in ("registry", "plugins", "pipeline", "selector", "close", "load"):
        with pytest.raises(AttributeError):
            getattr(host, private)
    assert host.call_outcome("peek").result == "ok"  # other tools, through the whole pipeline


def test_sessions_keep_their_own_state_and_release_it_when_they_close(tool_system: ToolSystem) -> None:
    released: list[str] = []

    class Shell:
        def __init__(self, owner: str) -> None:
            self.owner = owner

        def close(self) -> None:
            released.append(self.owner)

    def shell(context: CallContext) -> str:
        made = context.session.stash("test.shell", lambda: Shell(context.session_id))
        return made.owner

    tool_system.registry.register(name="shell", toolset="t", schema=schema("shell"), handler=shell)
    assert tool_system.call("shell", session_id="a") == "a"
    assert tool_system.call("shell", session_id="b") == "b"
    assert tool_system.call("shell", session_id="a") == "a"  # the same session's object, not b's
    assert set(tool_system.sessions) == {"a", "b"}
    assert tool_system.close_session("a") and released == ["a"]
    assert "a" not in tool_system.sessions and not tool_system.close_session("a")
    assert tool_system.call("shell", session_id="a") == "a"  # a new session under the old id starts afresh
    tool_system.close()
    assert sorted(released) == ["a", "a", "b"]


def test_idle_sessions_close(tool_system: ToolSystem) -> None:
    old, fresh = tool_system.session("old"), tool_system.session("fresh")
    old.last_used -= 120
    assert tool_system.sessions.close_idle(60) == ["old"]
    assert old.closed and not fresh.closed


class _Recorder:
    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.asked: list[str] = []

    def approve(self, request: Any) -> str:
        self.asked.append(request.subject)
        return self.answer


@pytest.fixture
def asking(make_tool_system: Callable[..., ToolSystem]) -> Callable[[_Recorder], ToolSystem]:
    class Policy:
        @hookimpl
        def pre_tool_call(self, name: str, arguments: dict[str, Any]) -> Any:
            return RequireApproval("risky", subject=f"risky {arguments['n']}") if name == "risky" else None

    def make(system_approver: _Recorder) -> ToolSystem:
        system = make_tool_system(Policy(), approver=system_approver)
        system.registry.register(
            name="risky",
            toolset="t",
            schema=schema("risky", n={"type": "integer"}),
            handler=lambda n: f"ran {n}",
        )
        return system

    return make


def test_a_call_may_bring_its_own_approver(asking: Callable[[_Recorder], ToolSystem]) -> None:
    system_approver, client = _Recorder("deny"), _Recorder("once")
    system = asking(system_approver)
    assert system.call_outcome("risky", {"n": 1}).status == "denied"
    assert system_approver.asked == ["risky 1"]
    outcome = system.call_outcome("risky", {"n": 2}, approver=client)
    assert outcome.status == "ok" and outcome.result == "ran 2"
    assert client.asked == ["risky 2"] and system_approver.asked == ["risky 1"]  # the system's was not asked


def test_the_guard_is_a_public_seam(tool_system: ToolSystem) -> None:
    class Refuse:
        def guard_command(self, command: str, context: Any) -> Any:
            from hermes_core.context import ApprovalDenied

            raise ApprovalDenied(f"policy refuses {command!r}")

        def guard_path(self, path: Any, op: str, context: Any) -> Any:
            return path

        def request_approval(self, kind: str, subject: str, reason: str, context: Any) -> None:
            return None

        def classify_command(self, command: str, workspace: Any) -> Any:
            return None

    def run(command: str, context: CallContext) -> str:
        context.guard_command(command)
        return "ran"

    tool_system.registry.register(
        name="run", toolset="t", schema=schema("run", command={"type": "string"}), handler=run
    )
    tool_system.guard = Refuse()
    outcome = tool_system.call_outcome("run", {"command": "ls"})
    assert outcome.status == "denied" and "policy refuses 'ls'" in outcome.result
