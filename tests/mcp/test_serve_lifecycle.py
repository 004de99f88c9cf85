"""The process of ``hermes mcp serve``: signals, children, a configuration that lists itself, a clean stdout.

The issue's report: SIGTERM left the server's own MCP servers running (reparented to PID 1); a configuration listing
``hermes mcp serve`` among its servers started a chain of servers; a plugin's ``print()`` at import corrupted the
stdio stream; a client dying mid-call printed a 60-line traceback; without the ``[mcp]`` extra the command died with
a traceback.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp_helpers import SERVER
from serve_helpers import HERMES, make_served, serving_http, stdio_client, text_of

from hermes_core.mcp._lifecycle import children
from hermes_core.testing import processes_with_arg, sleep_marker


def _tree(root: int) -> list[int]:
    """``root`` and every live descendant of it."""
    out, todo = [root], [root]
    while todo:
        parent = todo.pop()
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                stat = Path(f"/proc/{name}/stat").read_bytes()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 2 :].split()
            if int(fields[1]) == parent and fields[0] not in (b"Z", b"X"):
                out.append(int(name))
                todo.append(int(name))
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] not in (b"Z", b"X")


def _serve_pid(served: dict[str, Any]) -> int:
    """The pid of the ``hermes mcp serve`` of this test (found by its unique configuration path)."""
    wanted = str(served["config"]).encode()
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if wanted in argv and b"serve" in argv and _alive(int(name)):
                return int(name)
    raise AssertionError("hermes mcp serve is not running")


async def _wait(predicate: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        await anyio.sleep(0.05)
    return bool(predicate())


@pytest.fixture
def with_child(tmp_path: Path) -> dict[str, Any]:
    """A served system that is itself the client of a stdio MCP server (echo_server.py)."""
    config = f"[mcp.servers.echo]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(SERVER)}]\n"
    return make_served(tmp_path, config, ())


def test_sigterm_over_stdio_leaves_no_child(with_child: dict[str, Any], tmp_path: Path) -> None:
    marker = sleep_marker(120)

    async def main() -> None:
        with open(tmp_path / "stderr.log", "w") as errlog:
            async with stdio_client(with_child, "legacy", errlog=errlog) as client:
                tools = {t.name for t in (await client.list_tools()).tools}
                deadline = time.monotonic() + 30
                while (
                    "echo" not in tools and time.monotonic() < deadline
                ):  # the echo server is still connecting
                    await anyio.sleep(0.2)
                    tools = {t.name for t in (await client.list_tools()).tools}
                assert "echo" in tools
                assert text_of(await client.call_tool("echo", {"text": "via the child"})) == "via the child"
                started = await client.call_tool(
                    "terminal", {"command": f"sleep {marker}", "background": True}
                )
                assert "process_id=" in text_of(started)
                assert await _wait(lambda: bool(processes_with_arg(marker)), 30)
                serve = _serve_pid(with_child)
                tree = _tree(serve)
                assert len(tree) >= 3, tree  # hermes, the echo server, the sandboxed sleep
                os.kill(serve, signal.SIGTERM)
                assert await _wait(lambda: not any(_alive(p) for p in tree), 15), [
                    p for p in tree if _alive(p)
                ]
                assert not processes_with_arg(marker)

    with pytest.raises(BaseException):  # noqa: B017 - the server went away under the client
        anyio.run(main)
    assert not processes_with_arg(marker)
    assert "Traceback" not in (tmp_path / "stderr.log").read_text()


def test_sigterm_over_http_leaves_no_child(with_child: dict[str, Any]) -> None:
    from serve_helpers import http_client

    marker = sleep_marker(120)
    with serving_http(with_child) as (url, _, proc):

        async def main() -> None:
            async with http_client(url, None, "auto", None) as client:
                started = await client.call_tool(
                    "terminal", {"command": f"sleep {marker}", "background": True}
                )
                assert "process_id=" in text_of(started)

        anyio.run(main)
        deadline = time.monotonic() + 30
        while not processes_with_arg(marker):  # the sandbox may take a moment to start the command
            assert time.monotonic() < deadline, "the background command never started"
            time.sleep(0.05)
        while not any(
            b"echo_server" in Path(f"/proc/{p}/cmdline").read_bytes() for p, _ in _children(proc.pid)
        ):
            assert time.monotonic() < deadline, "the echo server never started"
            time.sleep(0.1)
        tree = _tree(proc.pid)
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in tree) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [p for p in tree if _alive(p)]
        assert not processes_with_arg(marker)


def _children(pid: int) -> list[tuple[int, int]]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_bytes()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 2 :].split()
            if int(fields[1]) == pid and fields[0] not in (b"Z", b"X"):
                out.append((int(name), int(fields[2])))
    return out


def test_a_configuration_that_lists_its_own_server_is_refused(tmp_path: Path) -> None:
    served = make_served(tmp_path)
    own = [*served["base"][1:], *served["args"]]  # this very command line, as a server of its own config
    other_spelling = [sys.executable, "-m", "hermes_core.cli", *served["base"][1:], *served["args"]]
    with open(served["config"], "a") as fh:
        fh.write(f"[mcp.servers.same]\ncommand = {json.dumps(HERMES)}\nargs = {json.dumps(own)}\n")
        fh.write(f"[mcp.servers.spelled]\ncommand = {json.dumps(other_spelling[0])}\n")
        fh.write(f"args = {json.dumps(other_spelling[1:])}\n")

    async def main() -> None:
        with open(tmp_path / "stderr.log", "w") as errlog:
            async with stdio_client(served, "legacy", errlog=errlog) as client:
                assert text_of(await client.call_tool("big", {"n": 1})) == "line 0\n"
                serve = _serve_pid(served)
                await anyio.sleep(4)  # time enough for a chain to grow, if it could
                hermes_below = [
                    p
                    for p in _tree(serve)[1:]
                    if b"serve" in Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")
                ]
                assert len(hermes_below) <= 1, hermes_below  # "spelled" may start once, and then refuses

    anyio.run(main)
    printed = (tmp_path / "stderr.log").read_text()
    assert "refused: this is the command line of this very `hermes mcp serve`" in printed
    logs = "".join(p.read_text() for p in (tmp_path / "home").rglob("mcp-spelled.log"))
    assert "refusing to serve: this `hermes mcp serve` was started by a `hermes mcp serve`" in logs


def test_stdout_carries_only_the_protocol(tmp_path: Path) -> None:
    served = make_served(tmp_path)
    (tmp_path / "plugins" / "noisy.py").write_text(
        "import os, sys\n"
        "from hermes_core import registry\n"
        "print('hello from a plugin at import')\n"
        "os.system('echo and from a child process')\n"
        "registry.register(name='noisy', toolset='demo', handler=lambda: print('and from a call') or 'quiet',\n"
        "    schema={'name': 'noisy', 'description': 'Prints.', 'parameters': {'type': 'object', 'properties': {}}})\n"
    )

    async def main() -> None:
        with open(tmp_path / "stderr.log", "w") as errlog:
            async with stdio_client(served, "legacy", errlog=errlog) as client:
                assert "noisy" in {t.name for t in (await client.list_tools()).tools}
                assert text_of(await client.call_tool("noisy", {})) == "quiet"

    anyio.run(main)
    printed = (tmp_path / "stderr.log").read_text()
    for line in ("hello from a plugin at import", "and from a child process", "and from a call"):
        assert line in printed


def test_a_client_that_dies_mid_call_ends_the_call_quietly(tmp_path: Path) -> None:
    served = make_served(tmp_path)
    marker = sleep_marker(60)

    async def main() -> None:
        with open(tmp_path / "stderr.log", "w") as errlog:
            with anyio.move_on_after(3):
                async with stdio_client(served, "legacy", errlog=errlog) as client:
                    await client.call_tool("terminal", {"command": f"sleep {marker}"})

    anyio.run(main)
    deadline = time.monotonic() + 10
    while processes_with_arg(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not processes_with_arg(marker)
    printed = (tmp_path / "stderr.log").read_text()
    assert "Traceback" not in printed, printed


def test_without_the_mcp_extra_serve_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from hermes_core.cli import cli

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a)
    )
    monkeypatch.setattr("hermes_core.mcp._lifecycle.divert_stdio", lambda: (0, 1))
    result = CliRunner().invoke(cli, ["mcp", "serve"])
    assert result.exit_code == 1
    assert "pip install 'hermes-tools[mcp]'" in result.output and "Traceback" not in result.output


def test_children_lists_what_this_process_started() -> None:
    import subprocess

    proc = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        assert (proc.pid, proc.pid) in children()
    finally:
        proc.kill()
        proc.wait()
