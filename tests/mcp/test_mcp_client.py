"""MCP servers as a tool source, against a real MCP server process (``echo_server.py``) over stdio and HTTP."""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import DEMO, SERVER, HttpEcho, eventually, free_port, load, process_gone

import hermes_builtin.plugin
from hermes_core import ToolSystem, hookimpl
from hermes_core.mcp import _spec

pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")

DEMO_TOOLS = {"echo", "add", "fail", "sleep", "pid", "header", "pic_ture", "grow", "crash", "working", "wipe"}


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ToolSystem, str]]:
    """One system with a working server next to broken ones; yields it with the demo server's state right after
    load() returned."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HERMES_HOME", str(tmp_path_factory.mktemp("mcp-home")))
        system = load(
            {
                "demo": DEMO,
                "missing": {"command": str(tmp_path_factory.mktemp("nothing") / "no-such-server")},
                "dies": {
                    "command": sys.executable,
                    "args": ["-c", "import sys; sys.exit('boom: no config')"],
                },
                "off": {**DEMO, "enabled": False},
                "neither": {"args": ["x"]},
            },
            {"max_backoff": 5},
        )
        yield system, system.mcp_status()["demo"]["state"]
        system.close()


@pytest.fixture
def demo(shared: tuple[ToolSystem, str]) -> ToolSystem:
    system = shared[0]
    assert system.wait_mcp(20)
    assert eventually(lambda: system.mcp_status()["demo"]["state"] == "ready", 20)
    return system


# -- start-up ------------------------------------------------------------------------------------------


def test_load_returns_at_once_and_servers_connect_in_the_background(shared: tuple[ToolSystem, str]) -> None:
    system, state_after_load = shared
    assert state_after_load == "connecting", "load() waited for the MCP server"
    assert system.wait_mcp(20)
    assert eventually(lambda: system.mcp_status()["demo"]["state"] == "ready", 20)
    assert set(system.registry.toolsets()["mcp-demo"]) >= DEMO_TOOLS


def test_a_server_that_never_answers_is_retried_after_the_start_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_spec, "MIN_START_TIMEOUT", 0.5)
    # reads stdin to the end and never answers the handshake
    mute = {"command": sys.executable, "args": ["-c", "import sys; sys.stdin.read()"], "timeout": 1}
    system = load({"mute": mute})
    try:
        assert system.mcp_status()["mute"]["state"] == "connecting"
        assert system.wait_mcp(0.2) is False
        assert system.wait_mcp(10) is True
        report = system.mcp_status()["mute"]
        assert (report["state"], report["tool_count"], report["error"]) == (
            "reconnecting",
            0,
            "no answer within 1 s",
        )
    finally:
        system.close()


def test_broken_servers_are_reported_and_do_not_affect_the_others(demo: ToolSystem) -> None:
    report = demo.mcp_status()
    assert report["missing"]["state"] == "reconnecting"  # it may be installed later: retried, never given up
    assert report["missing"]["error"].startswith("cannot start ")
    assert "No such file" in report["missing"]["error"]
    assert report["dies"]["state"] in ("reconnecting", "connecting")
    assert eventually(
        lambda: "boom: no config" in (demo.mcp_status()["dies"]["error"] or "")
    )  # stderr's tail
    assert report["off"]["state"] == "disabled"
    assert report["neither"]["state"] == "failed"
    assert "needs command" in report["neither"]["error"]
    assert report["demo"]["state"] == "ready"
    assert report["demo"]["error"] is None
    assert demo.call("add", {"a": 1, "b": 2}) == "3"


# -- registration --------------------------------------------------------------------------------------


def test_tools_are_registered_with_the_server_schema_annotations_and_provenance(demo: ToolSystem) -> None:
    defs = {d["function"]["name"]: d["function"] for d in demo.definitions(enabled=["mcp-demo"])}
    assert set(defs) >= DEMO_TOOLS
    add = defs["add"]
    assert add["description"] == "Add two integers."
    assert add["parameters"]["required"] == ["a", "b"]
    assert add["parameters"]["properties"]["a"]["type"] == "integer"
    entry = demo.registry["add"]
    assert (entry.toolset, entry.plugin, entry.source) == ("mcp-demo", "mcp:demo", "mcp")
    assert (entry.distribution, entry.version) == ("echo-demo", "1.2.3")
    assert entry.is_async
    assert demo.registry["wipe"].annotations == {"readOnlyHint": False, "destructiveHint": True}
    report = demo.mcp_status()["demo"]
    assert report["tool_count"] == len(report["tools"]) >= len(DEMO_TOOLS)
    assert report["transport"] == "stdio"


def test_names_providers_refuse_are_rewritten(demo: ToolSystem) -> None:
    assert "pic.ture" not in demo.registry
    assert demo.mcp_status()["demo"]["renamed"]["pic_ture"] == "pic.ture"
    assert demo.call("pic_ture") == "a caption\n[image: 100 bytes, image/png; attached]"


def test_a_tool_that_runs_only_as_a_task_is_hidden_with_the_reason(demo: ToolSystem) -> None:
    assert "batch" in demo.registry
    assert "batch" not in {d["function"]["name"] for d in demo.definitions()}
    assert "taskSupport: required" in demo.hidden()["batch"]
    assert "taskSupport: required" in demo.mcp_status()["demo"]["hidden"]["batch"]
    outcome = demo.call_outcome("batch")
    assert outcome.error_kind == "unknown_tool" and "not available right now" in outcome.result


# -- calls ---------------------------------------------------------------------------------------------


def test_a_call_goes_through_the_whole_pipeline(demo: ToolSystem) -> None:
    assert demo.call("add", {"a": 2, "b": 3}) == "5"
    assert demo.call("add", '{"a": 2, "b": 3}') == "5"
    assert demo.call("echo", {"text": "héllo"}) == "héllo"


def test_arguments_are_checked_against_the_server_schema_before_the_call(demo: ToolSystem) -> None:
    outcome = demo.call_outcome("add", {"a": "two"})
    assert outcome.status == "error"
    assert outcome.error_kind == "invalid_arguments"
    assert "'a'" in outcome.result and "'b'" in outcome.result


def test_a_server_side_error_becomes_a_tool_error(demo: ToolSystem) -> None:
    outcome = demo.call_outcome("fail", {"message": "the disk is on fire"})
    assert outcome.status == "error"
    assert outcome.error_kind == "mcp_tool_error"
    assert "the disk is on fire" in outcome.result


def test_images_and_binary_blobs_reach_the_host_as_attachments(demo: ToolSystem) -> None:
    from hermes_core.content import content_blocks

    outcome = demo.call_outcome("pic_ture")
    assert outcome.ok
    [image] = outcome.attachments
    assert (image.kind, image.mime_type, image.data) == ("image", "image/png", b"\x89PNG" + bytes(96))
    anthropic = content_blocks(outcome, "anthropic")
    assert anthropic[0] == {"type": "text", "text": outcome.result}
    assert anthropic[1]["type"] == "image" and anthropic[1]["source"]["media_type"] == "image/png"
    openai = content_blocks(outcome, "openai")
    assert openai[1]["image_url"]["url"].startswith("data:image/png;base64,iVBORw")
    assert content_blocks(outcome, "text")[1] == {"type": "text", "text": "[image: 100 bytes, image/png]"}
    files = demo.call_outcome("files")
    assert files.result.splitlines() == [
        '{"ok": true}',  # a text blob is decoded into the text
        "[binary file:///b.pdf: 13 bytes, application/pdf; attached]",
    ]
    [pdf] = files.attachments
    assert (pdf.kind, pdf.mime_type, pdf.data, pdf.name) == (
        "binary",
        "application/pdf",
        b"%PDF-1.4 fake",
        "file:///b.pdf",
    )
    assert (
        content_blocks(files, "anthropic")[-1]["text"] == "[binary file:///b.pdf: 13 bytes, application/pdf]"
    )


def test_a_destructive_tool_asks_for_approval(demo: ToolSystem) -> None:
    outcome = demo.call_outcome("wipe", {"target": "/srv/data"})  # nobody to ask: denied, never run
    assert (outcome.status, outcome.error_kind) == ("denied", "approval")
    assert "marks 'wipe' as destructive" in outcome.result


def test_an_approved_destructive_call_runs_and_the_approval_binds_to_its_arguments() -> None:
    from hermes_core.security import CallbackApprover

    asked: list[Any] = []

    def answer(request: Any) -> str:
        asked.append(request)
        return "once" if "/tmp/scratch" in request.subject else "deny"

    system = load({"demo": DEMO}, approver=CallbackApprover(answer))
    try:
        assert eventually(lambda: system.mcp_status()["demo"]["state"] == "ready", 20)
        assert system.call("wipe", {"target": "/tmp/scratch"}) == "wiped /tmp/scratch"
        assert asked[0].kind == "mcp" and asked[0].subject == 'mcp:demo wipe {"target": "/tmp/scratch"}'
        assert system.call_outcome("wipe", {"target": "/home"}).status == "denied"
        assert system.call("echo", {"text": "no question"}) == "no question"
        assert len(asked) == 2
    finally:
        system.close()


def test_approve_none_trusts_the_server_and_approve_all_asks_for_everything() -> None:
    system = load(
        {"trusted": {**DEMO, "approve": "none"}, "wary": {**DEMO, "approve": "all", "prefix": "w_"}}
    )
    try:
        assert eventually(lambda: all(s["state"] == "ready" for s in system.mcp_status().values()), 20)
        assert system.call("wipe", {"target": "x"}) == "wiped x"
        assert system.call_outcome("w_echo", {"text": "x"}).status == "denied"
    finally:
        system.close()


def test_a_silent_call_times_out_but_progress_keeps_it_alive() -> None:
    system = load({"slow": {**DEMO, "timeout": 1}})
    try:
        assert eventually(lambda: system.mcp_status()["slow"]["state"] == "ready", 20)
        started = time.perf_counter()
        outcome = system.call_outcome("sleep", {"seconds": 10})
        assert time.perf_counter() - started < 3
        assert (outcome.status, outcome.error_kind) == ("error", "timeout")
        assert "did not answer within 1 s" in outcome.result
        # twice the timeout, with a progress notification every 0.25 s: never silent for 1 s
        assert system.call("working", {"seconds": 2, "every": 0.25}) == "worked 2.0 s"
        assert system.call("sleep", {"seconds": 0.01}) == "slept 0.01"  # the session is still usable
        assert system.mcp_status()["slow"]["state"] == "ready"
    finally:
        system.close()


def test_async_callers_and_nested_sync_calls_reach_the_session(demo: ToolSystem) -> None:
    assert asyncio.run(demo.acall("echo", {"text": "from a foreign loop"})) == "from a foreign loop"

    async def on_the_system_loop() -> str:
        # a sync call made on the system's own loop is served by a nested loop; the session lives on the first
        return demo.call("add", {"a": 20, "b": 22})

    assert demo.pipeline.bridge.run(on_the_system_loop(), 20) == "42"


def test_a_changed_tool_list_is_picked_up(demo: ToolSystem) -> None:
    assert demo.call("grow") == "grown"
    assert eventually(lambda: "triple" in demo.registry)
    assert demo.registry["triple"].toolset == "mcp-demo"
    assert demo.call("triple", {"n": 4}) == "12"
    assert set(demo.registry.toolsets()["mcp-demo"]) >= DEMO_TOOLS


# -- names that clash ----------------------------------------------------------------------------------


def test_two_servers_with_the_same_tools_both_stay_callable_under_qualified_names() -> None:
    system = load({"one": DEMO, "two": DEMO})
    try:
        assert eventually(lambda: all(s["state"] == "ready" for s in system.mcp_status().values()), 20)
        assert eventually(lambda: "two_pid" in system.registry and "one_pid" in system.registry)
        assert "echo" not in system.registry and "pid" not in system.registry
        one, two = int(system.call("one_pid")), int(system.call("two_pid"))
        assert one != two  # each name reaches its own server
        assert system.call("two_echo", {"text": "t"}) == "t"
        report = system.mcp_status()
        assert all(name.startswith("one_") for name in report["one"]["tools"])
        clash = next(c for c in report["one"]["clashes"] if c["tool"] == "echo")
        assert clash == {"tool": "echo", "name": "one_echo", "with": ["MCP server 'two'"]}
        # one server goes for good: the other's names stay as they are until it re-lists
        system.mcp_restart("one")
        assert system.call("two_echo", {"text": "still"}) == "still"
    finally:
        system.close()


def test_a_clash_with_a_built_in_is_qualified_and_the_built_in_keeps_its_name(tmp_path: Path) -> None:
    class Local:
        @hookimpl
        def register_tools(self, registry: Any) -> None:
            registry.register(
                name="echo",
                toolset="local",
                schema={"name": "echo", "description": "Local echo.", "parameters": {"type": "object"}},
                handler=lambda: "the local one",
            )

    (tmp_path / "notes.txt").write_text("local file\n")
    system = load({"demo": DEMO}, plugins=[hermes_builtin.plugin, Local()], workspace=tmp_path)
    try:
        assert eventually(lambda: system.mcp_status()["demo"]["state"] == "ready", 20)
        assert system.registry["read_file"].toolset == "file"
        assert "local file" in system.call("read_file", {"path": "notes.txt"})
        assert system.call("demo_read_file", {"path": "notes.txt"}) == "remote read of notes.txt"
        assert system.call("echo") == "the local one"
        assert system.call("demo_echo", {"text": "remote"}) == "remote"
        assert system.call("add", {"a": 1, "b": 1}) == "2"  # no clash, no prefix
        clashes = {c["tool"]: c for c in system.mcp_status()["demo"]["clashes"]}
        assert clashes["read_file"]["with"] == ["toolset 'file'"]
        assert clashes["echo"] == {"tool": "echo", "name": "demo_echo", "with": ["toolset 'local'"]}
    finally:
        system.close()


def test_a_prefix_from_the_configuration_names_every_tool() -> None:
    system = load({"one": {**DEMO, "prefix": "first__"}, "two": DEMO})
    try:
        assert eventually(lambda: all(s["state"] == "ready" for s in system.mcp_status().values()), 20)
        assert eventually(lambda: "first__echo" in system.registry and "echo" in system.registry)
        assert system.registry["echo"].toolset == "mcp-two"
        assert system.mcp_status()["two"]["clashes"] == []
        assert system.call("first__add", {"a": 1, "b": 2}) == "3"
    finally:
        system.close()


# -- failures, reconnection and restart ----------------------------------------------------------------


def test_a_server_down_keeps_its_tools_listed_answers_reconnecting_and_comes_back(tmp_path: Path) -> None:
    down = tmp_path / "down"
    flaky = {"command": sys.executable, "args": [SERVER, "--refuse-if", str(down)]}
    system = load({"demo": flaky}, {"max_backoff": 0.5})
    try:
        assert eventually(lambda: system.mcp_status()["demo"]["state"] == "ready", 20)
        first_pid = int(system.call("pid"))
        down.write_text("")  # from now on the server refuses to start
        outcome = system.call_outcome("crash")
        assert outcome.status == "error" and "closed the connection" in outcome.result
        assert eventually(lambda: process_gone(first_pid), 5), "the crashed server was not reaped"
        assert eventually(lambda: system.mcp_status()["demo"]["attempts"] >= 3, 10)
        report = system.mcp_status()["demo"]
        assert report["state"] == "reconnecting"
        assert "refusing to start" in report["error"]
        assert "echo" in {d["function"]["name"] for d in system.definitions()}  # still listed
        outcome = system.call_outcome("echo", {"text": "x"})
        assert outcome.error_kind == "mcp_unavailable"
        assert "MCP server 'demo' is reconnecting; retry shortly" in outcome.result
        down.unlink()
        assert eventually(lambda: system.mcp_status()["demo"]["state"] == "ready", 10)
        assert int(system.call("pid")) != first_pid
    finally:
        system.close()


def test_a_server_killed_and_kept_down_comes_back_by_itself(http_echo: HttpEcho) -> None:
    """The 60-second outage, compressed: the backoff cap is 0.5 s instead of 30 s and the server stays down for
    4 s, several cycles at the cap; a longer outage only repeats the last cycle."""
    http_echo.start()
    system = load({"web": {"url": http_echo.url, "timeout": 5}}, {"max_backoff": 0.5})
    try:
        assert eventually(lambda: system.mcp_status()["web"]["state"] == "ready", 20)
        assert system.call("add", {"a": 1, "b": 2}) == "3"
        http_echo.kill()
        assert eventually(lambda: system.mcp_status()["web"]["state"] == "reconnecting", 10)
        time.sleep(4)
        report = system.mcp_status()["web"]
        assert report["state"] == "reconnecting" and report["attempts"] >= 5, report
        assert system.call_outcome("add", {"a": 1, "b": 2}).error_kind == "mcp_unavailable"
        assert "add" in system.registry
        http_echo.start()  # the same port, a new process
        assert eventually(lambda: system.mcp_status()["web"]["state"] == "ready", 10)
        assert system.call("add", {"a": 40, "b": 2}) == "42"
    finally:
        system.close()


def test_a_server_not_up_at_the_first_try_connects_when_it_comes_up(http_echo: HttpEcho) -> None:
    system = load({"late": {"url": http_echo.url, "timeout": 5}}, {"max_backoff": 0.5})
    try:
        assert system.wait_mcp(10)
        assert system.mcp_status()["late"]["state"] == "reconnecting"
        assert system.mcp_status()["late"]["error"].startswith("cannot connect")
        http_echo.start()
        assert eventually(lambda: system.mcp_status()["late"]["state"] == "ready", 10)
        assert system.call("echo", {"text": "late but here"}) == "late but here"
    finally:
        system.close()


def test_restart_reconnects_at_once_whatever_the_backoff(tmp_path: Path) -> None:
    down = tmp_path / "down"
    down.write_text("")
    flaky = {"command": sys.executable, "args": [SERVER, "--refuse-if", str(down)], "max_backoff": 600}
    system = load({"demo": flaky, "off": {**DEMO, "enabled": False}})
    try:
        assert eventually(lambda: system.mcp_status()["demo"]["attempts"] >= 2, 20)
        down.unlink()  # the next attempt would be seconds away, and further each time
        assert system.mcp_restart("demo") is True
        assert system.wait_mcp(20)
        assert system.mcp_status()["demo"]["state"] == "ready"
        pid = int(system.call("pid"))
        assert system.mcp_restart("demo") is True  # a ready server gets a new process
        assert system.wait_mcp(20)
        assert eventually(lambda: system.mcp_status()["demo"]["state"] == "ready", 10)
        assert int(system.call("pid")) != pid
        assert eventually(lambda: process_gone(pid), 5)
        assert system.mcp_restart("off") is False
        with pytest.raises(KeyError, match="no MCP server named 'nope'"):
            system.mcp_restart("nope")
    finally:
        system.close()


def test_close_stops_the_server_process() -> None:
    system = load({"demo": DEMO})
    assert eventually(lambda: system.mcp_status()["demo"]["state"] == "ready", 20)
    pid = int(system.call("pid"))
    started = time.perf_counter()
    system.close()
    took = time.perf_counter() - started
    assert process_gone(pid), "the server process is still there (or a zombie) after close()"
    assert took < 3, f"close() took {took:.2f} s"
    assert system.mcp_status()["demo"]["state"] == "closed"
    assert "mcp-demo" not in system.registry.toolsets()
    gc.collect()  # a transport left for the collector would warn "Event loop is closed" here


def test_close_while_a_server_is_still_starting() -> None:
    before = _server_children()
    system = load({"demo": DEMO})
    assert eventually(lambda: len(_server_children() - before) == 1, 5), "the server process never started"
    (server,) = _server_children() - before
    assert _child_of_this_process(server)
    assert system.mcp_status()["demo"]["state"] == "connecting"
    system.close()
    assert system.mcp_status()["demo"]["state"] == "closed"
    # that very process is gone and reaped (another test's child, even a zombie, is none of this test's business)
    assert not _child_of_this_process(server), "the server process (or its zombie) is left after close()"
    gc.collect()


def _server_children() -> set[int]:
    """Pids of this process's children running the echo server."""
    me = str(os.getpid())
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue
        if fields[1] == me and SERVER.encode() in cmdline:
            found.add(int(stat.parent.name))
    return found


def _child_of_this_process(pid: int) -> bool:
    """Whether ``pid`` is still a child of this process, running or a zombie not yet reaped."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[1] == str(os.getpid())


# -- HTTP ----------------------------------------------------------------------------------------------


def test_an_http_server_with_headers_from_the_environment(
    http_echo: HttpEcho, monkeypatch: pytest.MonkeyPatch
) -> None:
    http_echo.start()
    monkeypatch.setenv("DEMO_MCP_GREETING", "hello-from-env")
    system = load({"web": {"url": http_echo.url, "headers": {"X-Greeting": {"env": "DEMO_MCP_GREETING"}}}})
    try:
        assert eventually(lambda: system.mcp_status()["web"]["state"] == "ready", 20)
        assert system.mcp_status()["web"]["transport"] == "http"
        assert system.registry["add"].toolset == "mcp-web"
        assert system.call("add", {"a": 40, "b": 2}) == "42"
        assert system.call("header", {"name": "X-Greeting"}) == "hello-from-env"
    finally:
        system.close()


def test_an_unset_header_secret_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEMO_MCP_UNSET", raising=False)
    system = load(
        {"web": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": {"env": "DEMO_MCP_UNSET"}}}}
    )
    try:
        report = system.mcp_status()["web"]
        assert report["state"] == "failed"
        assert (
            report["error"]
            == "configuration: header 'Authorization' points at an unset variable or an unreadable file"
        )
    finally:
        system.close()


def test_an_unreachable_http_server_says_why_and_keeps_trying() -> None:
    system = load({"web": {"url": f"http://127.0.0.1:{free_port()}/mcp", "timeout": 5}})
    try:
        assert system.wait_mcp(10)
        report = system.mcp_status()["web"]
        assert report["state"] == "reconnecting"
        assert report["error"].startswith("cannot connect: ")
    finally:
        system.close()


def test_http_errors_keep_their_status_and_a_hint(http_echo: HttpEcho) -> None:
    http_echo.start()
    wrong_path = http_echo.url.replace("/mcp", "/nothing-here")
    system = load({"lost": {"url": wrong_path, "timeout": 5}}, {"max_backoff": 5})
    try:
        assert eventually(lambda: system.mcp_status()["lost"]["error"] is not None, 10)
        error = system.mcp_status()["lost"]["error"]
        assert error.startswith("HTTP 404 Not Found: nothing answers at this URL"), error
        assert "[mcp.servers.lost] url" in error
    finally:
        system.close()
