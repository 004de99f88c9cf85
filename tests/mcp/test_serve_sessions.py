"""``hermes mcp serve`` over HTTP gives every client a session of its own, in both protocol eras.

Run for real: a ``hermes mcp serve --http`` process and the MCP SDK's client (2.3; ``mode="auto"`` speaks
2026-07-28, ``mode="legacy"`` the 2025-11-25 handshake). The issue's report: every 2026-07-28 client shared one
session, so one saw another's todo list and background processes, and a forged ``request_state`` turned a
one-time answer into a session approval (``git push --force`` ran unapproved).
"""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult, InputRequiredResult
from serve_helpers import Asker, http_client, make_served, outcome_of, serving_http, text_of

from hermes_core.testing import processes_gone, processes_with_arg, sleep_marker

PUSH = {"command": "git push --force"}


@pytest.fixture
def todo_served(tmp_path: Path) -> dict[str, Any]:
    return make_served(tmp_path, "[mcp.serve]\nsession_idle_seconds = 3\n", ("demo", "terminal", "todo"))


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_two_clients_side_by_side_share_nothing(todo_served: dict[str, Any], mode: str) -> None:
    marker = sleep_marker(120)
    with serving_http(todo_served) as (url, _, _):

        async def main() -> None:
            async with http_client(url, None, mode, None) as a, http_client(url, None, mode, None) as b:
                assert a.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
                added = await a.call_tool("todo", {"action": "add", "items": ["secret plan of A"]})
                assert "secret plan of A" in text_of(added)
                assert text_of(await b.call_tool("todo", {"action": "list"})) == "Todo list is empty."
                await b.call_tool("todo", {"action": "add", "items": ["B's own task"]})
                listed = text_of(await a.call_tool("todo", {"action": "list"}))
                assert "secret plan of A" in listed and "B's own task" not in listed  # A keeps its own, too

                started = await a.call_tool("terminal", {"command": f"sleep {marker}", "background": True})
                assert "process_id=" in text_of(started), text_of(started)
                assert text_of(await b.call_tool("process", {"action": "list"})) == "no background processes"
                assert marker in text_of(await a.call_tool("process", {"action": "list"}))
                process_id = text_of(started).split("process_id=")[1].split()[0]
                foreign = await b.call_tool("process", {"action": "kill", "process_id": process_id})
                assert foreign.is_error and "no background process" in text_of(foreign)
                deadline = time.monotonic() + 30
                while not processes_with_arg(marker):  # B could not touch it (the sandbox may start it late)
                    assert time.monotonic() < deadline, "the background command is not running"
                    await anyio.sleep(0.05)

        anyio.run(main)
        # A's session ends (legacy: the client deleted it; 2026-07-28: it idles out after 3 s): its process too
        assert processes_gone(marker, 30), "the background process outlived its client's session"


def test_a_forged_foreign_or_replayed_request_state_is_refused(served: dict[str, Any]) -> None:
    with serving_http(served) as (url, _, _):

        async def main() -> None:
            async with (
                http_client(url, None, "auto", Asker("once")) as a,
                http_client(url, None, "auto", Asker("once")) as b,
            ):
                first = await a.session.call_tool("terminal", PUSH, allow_input_required=True)
                assert isinstance(first, InputRequiredResult), first
                [key] = first.input_requests
                handle = first.request_state
                assert handle and "session" not in handle  # an opaque handle, not the answers themselves
                session_answer = {key: ElicitResult(action="accept", content={"decision": "session"})}
                once = {key: ElicitResult(action="accept", content={"decision": "once"})}

                # the old attack: state that claims the user answered "session"
                forged = base64.urlsafe_b64encode(json.dumps({"answers": {key: "session"}}).encode()).decode()
                for state in (forged, handle + "x", "", "a.b"):
                    if not state:
                        continue
                    with pytest.raises(MCPError, match="request_state refused"):
                        await a.session.call_tool(
                            "terminal", PUSH, input_responses=session_answer, request_state=state
                        )
                # another client cannot use A's handle, and trying does not burn it
                with pytest.raises(MCPError, match="another session"):
                    await b.session.call_tool("terminal", PUSH, input_responses=once, request_state=handle)
                # nor can it be used for another call
                with pytest.raises(MCPError, match="another call"):
                    other = {"command": "git push --force origin main"}
                    await a.session.call_tool("terminal", other, input_responses=once, request_state=handle)

        anyio.run(main)


def test_a_round_is_used_once_and_a_once_answer_is_not_remembered(served: dict[str, Any]) -> None:
    with serving_http(served) as (url, _, _):

        async def main() -> None:
            async with http_client(url, None, "auto", Asker("once")) as a:
                first = await a.session.call_tool("terminal", PUSH, allow_input_required=True)
                assert isinstance(first, InputRequiredResult)
                [key] = first.input_requests
                once = {key: ElicitResult(action="accept", content={"decision": "once"})}
                done = await a.session.call_tool(
                    "terminal", PUSH, input_responses=once, request_state=first.request_state
                )
                assert outcome_of(done)["status"] == "ok" and "not a git repository" in text_of(done)
                with pytest.raises(MCPError, match="already used"):
                    await a.session.call_tool(
                        "terminal", PUSH, input_responses=once, request_state=first.request_state
                    )
                again = await a.session.call_tool("terminal", PUSH, allow_input_required=True)
                assert isinstance(again, InputRequiredResult)  # "once" was not turned into a grant
                # answers to questions that were never asked count for nothing: it asks again
                sneaky = {"hermes-approval-000000000000000000000000": once[key]}
                third = await a.session.call_tool(
                    "terminal",
                    PUSH,
                    input_responses=sneaky,
                    request_state=again.request_state,
                    allow_input_required=True,
                )
                assert isinstance(third, InputRequiredResult) and list(third.input_requests) == [key]

        anyio.run(main)


def test_a_session_answer_holds_for_its_client_only(served: dict[str, Any]) -> None:
    with serving_http(served) as (url, _, _):

        async def main() -> None:
            asker_a, asker_b = Asker("session"), Asker("deny")
            async with (
                http_client(url, None, "auto", asker_a) as a,
                http_client(url, None, "auto", asker_b) as b,
            ):
                for _ in range(2):
                    result = await a.call_tool("terminal", PUSH)
                    assert outcome_of(result)["status"] == "ok", text_of(result)
                assert len(asker_a.questions) == 1  # remembered for A's session
                denied = await b.call_tool("terminal", PUSH)
                assert outcome_of(denied)["status"] == "denied" and len(asker_b.questions) == 1

        anyio.run(main)


def test_sessions_that_end_are_forgotten(tmp_path: Path) -> None:
    """In-process: after many clients came and went, the server keeps no session, listener or round."""
    from hermes_core import ToolSystem
    from hermes_core.mcp._spec import ServeSettings
    from hermes_core.mcp.server import McpServer

    system = ToolSystem.load(plugins_dir=False, config={"toolsets": {"enabled": ["todo"]}})
    server = McpServer(system, settings=ServeSettings(session_idle_seconds=1.0))
    ready = anyio.Event()
    box: dict[str, str] = {}

    async def main() -> None:
        async with anyio.create_task_group() as group:

            def on_ready(url: str) -> None:
                box["url"] = url
                ready.set()

            group.start_soon(lambda: server.serve_http("127.0.0.1", 0, on_ready=on_ready))
            await ready.wait()
            for mode in ("legacy", "auto") * 5:
                async with http_client(box["url"], None, mode, None) as client:
                    await client.list_tools()
                    await client.call_tool("todo", {"action": "list"})
            deadline = time.monotonic() + 10
            while (len(server.sessions) or len(system.sessions)) and time.monotonic() < deadline:
                await anyio.sleep(0.1)
            group.cancel_scope.cancel()

    try:
        anyio.run(main)
        assert len(server.sessions) == 0 and server.sessions.listeners() == []
        assert len(system.sessions) == 0 and len(server.rounds) == 0
    finally:
        system.close()
