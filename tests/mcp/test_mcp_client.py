"""MCP servers as a tool source, against a real MCP server process (``echo_server.py``) over stdio and HTTP."""

from __future__ import annotations

import asyncio
import base64
import gc
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_core import ToolSystem, hookimpl, mcp_client
from hermes_core.mcp_client import render_result, safe_tool_name, status, wait_ready

pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")

SERVER = str(Path(__file__).with_name("echo_server.py"))
DEMO = {"command": sys.executable, "args": [SERVER]}
DEMO_TOOLS = {"echo", "add", "fail", "sleep", "pid", "header", "pic_ture", "grow", "crash"}


def load(servers: dict[str, Any], **kwargs: Any) -> ToolSystem:
    return ToolSystem.load(
        config={"mcp": {"servers": servers}}, load_entry_points=False, plugins_dir=False, **kwargs
    )


def eventually(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def process_gone(pid: int) -> bool:
    """True when no process (not even a zombie waiting to be reaped) has this pid."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ToolSystem, float]]:
    """One system with a working server next to broken ones; yields it with the time load() took."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HERMES_HOME", str(tmp_path_factory.mktemp("mcp-home")))
        started = time.perf_counter()
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
            }
        )
        took = time.perf_counter() - started
        yield system, took
        system.close()


@pytest.fixture
def demo(shared: tuple[ToolSystem, float]) -> ToolSystem:
    system = shared[0]
    assert wait_ready(system, 20)
    return system


# -- start-up ------------------------------------------------------------------------------------------


def test_load_returns_at_once_and_servers_connect_in_the_background(shared: tuple[ToolSystem, float]) -> None:
    system, took = shared
    assert took < 0.5, f"load() took {took:.3f} s: it must not wait for MCP servers"
    assert wait_ready(system, 20)
    assert status(system)["demo"]["state"] == "ready"
    assert set(system.registry.toolsets()["mcp-demo"]) >= DEMO_TOOLS


def test_a_server_that_never_answers_fails_after_the_start_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mcp_client, "MIN_START_TIMEOUT", 0.5)
    # reads stdin to the end and never answers the handshake
    mute = {"command": sys.executable, "args": ["-c", "import sys; sys.stdin.read()"], "timeout": 1}
    system = load({"mute": mute})
    try:
        assert status(system)["mute"]["state"] == "connecting"
        assert wait_ready(system, 0.2) is False
        assert wait_ready(system, 10) is True
        assert status(system)["mute"] == {**status(system)["mute"], "state": "failed", "tool_count": 0}
        assert status(system)["mute"]["error"] == "no answer within 1 s"
    finally:
        system.close()


def test_broken_servers_are_reported_and_do_not_affect_the_others(demo: ToolSystem) -> None:
    report = status(demo)
    assert report["missing"]["state"] == "failed"
    assert report["missing"]["error"].startswith("cannot start ")
    assert "No such file" in report["missing"]["error"]
    assert report["dies"]["state"] == "failed"
    assert report["dies"]["error"].startswith("the server closed the connection")
    assert "boom: no config" in report["dies"]["error"]  # the tail of its stderr
    assert report["off"]["state"] == "disabled"
    assert report["neither"]["state"] == "failed"
    assert "needs command" in report["neither"]["error"]
    assert report["demo"]["state"] == "ready"
    assert report["demo"]["error"] is None
    assert demo.call("add", {"a": 1, "b": 2}) == "3"


# -- registration --------------------------------------------------------------------------------------


def test_tools_are_registered_with_the_server_schema_and_provenance(demo: ToolSystem) -> None:
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
    report = status(demo)["demo"]
    assert report["tool_count"] == len(report["tools"]) >= len(DEMO_TOOLS)
    assert report["transport"] == "stdio"


def test_names_providers_refuse_are_rewritten(demo: ToolSystem) -> None:
    assert "pic.ture" not in demo.registry
    assert status(demo)["demo"]["renamed"] == {"pic_ture": "pic.ture"}
    assert demo.call("pic_ture") == "a caption\n[image: 100 bytes, image/png]"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=100))
def test_safe_names_fit_every_provider(name: str) -> None:
    safe = safe_tool_name(name)
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]{0,63}", safe), safe
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]{0,63}", name):
        assert safe == name


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


def test_a_call_that_outlasts_the_server_timeout_is_stopped() -> None:
    system = load({"slow": {**DEMO, "timeout": 1}})
    try:
        assert wait_ready(system, 20)
        started = time.perf_counter()
        outcome = system.call_outcome("sleep", {"seconds": 10})
        assert time.perf_counter() - started < 3
        assert (outcome.status, outcome.error_kind) == ("error", "timeout")
        assert "did not answer within 1 s" in outcome.result
        assert system.call("sleep", {"seconds": 0.01}) == "slept 0.01"  # the session is still usable
        assert status(system)["slow"]["state"] == "ready"
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


# -- failures and shutdown -----------------------------------------------------------------------------


def test_a_server_that_exits_loses_its_tools_then_comes_back() -> None:
    system = load({"demo": DEMO})
    try:
        assert wait_ready(system, 20)
        first_pid = int(system.call("pid"))
        outcome = system.call_outcome("crash")
        assert outcome.status == "error"
        assert "closed the connection" in outcome.result
        assert eventually(lambda: "echo" not in system.registry, 5)
        report = status(system)["demo"]
        assert report["error"] == "the server closed the connection"
        assert report["tool_count"] == 0
        assert "mcp-demo" not in system.registry.toolsets()
        assert "Unknown tool" in system.call("echo", {"text": "x"})
        assert eventually(lambda: process_gone(first_pid), 5), "the crashed server was not reaped"
        # reconnected after a short backoff, with a new process
        assert wait_ready(system, 20)
        assert status(system)["demo"]["state"] == "ready"
        assert int(system.call("pid")) != first_pid
    finally:
        system.close()


def test_close_stops_the_server_process() -> None:
    system = load({"demo": DEMO})
    assert wait_ready(system, 20)
    pid = int(system.call("pid"))
    started = time.perf_counter()
    system.close()
    took = time.perf_counter() - started
    assert process_gone(pid), "the server process is still there (or a zombie) after close()"
    assert took < 3, f"close() took {took:.2f} s"
    assert status(system)["demo"]["state"] == "closed"
    assert "mcp-demo" not in system.registry.toolsets()
    gc.collect()  # a transport left for the collector would warn "Event loop is closed" here


def test_close_while_a_server_is_still_starting() -> None:
    before = _server_children()
    system = load({"demo": DEMO})
    assert eventually(lambda: len(_server_children() - before) == 1, 5), "the server process never started"
    assert status(system)["demo"]["state"] == "connecting"
    system.close()
    assert status(system)["demo"]["state"] == "closed"
    assert _server_children() - before == set(), "a server process (or zombie) is left after close()"
    gc.collect()


def _server_children() -> set[int]:
    """Pids of this process's children (zombies included) running the echo server."""
    me = str(os.getpid())
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue
        if fields[1] == me and (SERVER.encode() in cmdline or fields[0] == "Z"):
            found.add(int(stat.parent.name))
    return found


def test_a_clash_with_a_non_mcp_tool_is_skipped_and_reported() -> None:
    class Local:
        @hookimpl
        def register_tools(self, registry: Any) -> None:
            registry.register(
                name="echo",
                toolset="local",
                schema={"name": "echo", "description": "Local echo.", "parameters": {"type": "object"}},
                handler=lambda: "the local one",
            )

    system = load({"demo": DEMO}, plugins=[Local()])
    try:
        assert wait_ready(system, 20)
        report = status(system)["demo"]
        assert report["state"] == "ready"
        assert report["skipped"] == {"echo": "name 'echo' is taken by toolset 'local'"}
        assert system.registry["echo"].toolset == "local"
        assert system.call("echo") == "the local one"
        assert system.call("add", {"a": 1, "b": 1}) == "2"
    finally:
        system.close()


def test_mcp_servers_may_replace_each_others_tools() -> None:
    system = load({"one": DEMO, "two": DEMO})
    try:
        assert wait_ready(system, 20)
        report = status(system)
        assert report["one"]["skipped"] == report["two"]["skipped"] == {}
        owners = {system.registry[name].toolset for name in DEMO_TOOLS}
        assert owners <= {"mcp-one", "mcp-two"}
        assert report["one"]["tool_count"] + report["two"]["tool_count"] == len(system.registry)
        # whoever owns "crash" goes away; the other server's tools of the same names take over
        loser = system.registry["crash"].toolset
        survivor = "mcp-two" if loser == "mcp-one" else "mcp-one"
        system.call("crash")
        assert eventually(
            lambda: "echo" in system.registry and system.registry["echo"].toolset == survivor, 5
        )
        assert system.call("add", {"a": 1, "b": 1}) == "2"
    finally:
        system.close()


# -- HTTP ----------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, SERVER, "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the HTTP MCP server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


def test_an_http_server_with_headers_from_the_environment(
    http_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEMO_MCP_GREETING", "hello-from-env")
    system = load({"web": {"url": http_server, "headers": {"X-Greeting": {"env": "DEMO_MCP_GREETING"}}}})
    try:
        assert wait_ready(system, 20)
        assert status(system)["web"]["state"] == "ready"
        assert status(system)["web"]["transport"] == "http"
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
        report = status(system)["web"]
        assert report["state"] == "failed"
        assert (
            report["error"]
            == "configuration: header 'Authorization' points at an unset variable or an unreadable file"
        )
    finally:
        system.close()


def test_an_unreachable_http_server_fails_with_the_reason() -> None:
    system = load({"web": {"url": f"http://127.0.0.1:{_free_port()}/mcp", "timeout": 5}})
    try:
        assert wait_ready(system, 10)
        report = status(system)["web"]
        assert report["state"] == "failed"
        assert report["error"].startswith("cannot connect: ")
    finally:
        system.close()


# -- results -------------------------------------------------------------------------------------------


def test_results_render_text_and_summarise_everything_else() -> None:
    from mcp.types import (
        AudioContent,
        BlobResourceContents,
        CallToolResult,
        EmbeddedResource,
        ResourceLink,
        TextContent,
        TextResourceContents,
    )

    blob = base64.b64encode(bytes(10)).decode()
    result = CallToolResult(
        content=[
            TextContent(text="one"),
            AudioContent(data=base64.b64encode(bytes(7)).decode(), mime_type="audio/wav"),
            EmbeddedResource(resource=TextResourceContents(uri="file:///a.txt", text="inline text")),
            EmbeddedResource(resource=BlobResourceContents(uri="file:///b.bin", blob=blob, mime_type="x/y")),
            ResourceLink(uri="file:///c.txt", name="c"),
        ]
    )
    assert render_result(result).splitlines() == [
        "one",
        "[audio: 7 bytes, audio/wav]",
        "inline text",
        "[resource file:///b.bin: 10 bytes, x/y]",
        "[resource link: file:///c.txt]",
    ]
    assert render_result(CallToolResult(content=[], structured_content={"n": 1})) == '{"n": 1}'
    assert render_result(CallToolResult(content=[])) == ""
