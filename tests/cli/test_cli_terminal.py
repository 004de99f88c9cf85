"""The ``hermes`` command on a real terminal (a pty): a spinner with the elapsed time on a long call, Ctrl-C
ending any command with status 130, and a workspace that must exist."""

from __future__ import annotations

import io
import os
import pty
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest
from cli_helpers import HERMES, Run, write_plugin

from hermes_core.cli._progress import Progress

pytestmark = pytest.mark.skipif(not HERMES.exists(), reason="the hermes console script is not installed")

SLOW = """
import asyncio, time
from hermes_core import registry

def nap(seconds: float = 1.6) -> str:
    time.sleep(seconds)
    return "rested"

async def anap(seconds: float = 30) -> str:
    await asyncio.sleep(seconds)
    return "rested"

for name, handler in (("nap", nap), ("anap", anap)):
    registry.register(
        name=name, toolset="naps",
        schema={"name": name, "description": "Sleeps.",
                "parameters": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
        handler=handler,
    )
"""


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_spinner_shows_after_the_delay_pauses_and_is_erased() -> None:
    quick = Tty()
    with Progress("quick", delay=0.3, stream=quick):
        time.sleep(0.05)
    assert quick.getvalue() == ""  # a call under the delay shows nothing
    slow = Tty()
    with Progress("slow", delay=0.1, stream=slow) as progress:
        time.sleep(0.45)
        with progress.paused():
            drawn = slow.getvalue()
            time.sleep(0.3)
            assert slow.getvalue() == drawn  # nothing drawn while the human is asked
    text = slow.getvalue()
    assert "slow  0." in text and text.endswith("\r\x1b[K")
    piped = io.StringIO()  # not a terminal: never a spinner
    with Progress("piped", delay=0.0, stream=piped):
        time.sleep(0.2)
    assert piped.getvalue() == ""


def spawn(home: Path, *args: str) -> tuple[subprocess.Popen[bytes], int]:
    """``hermes ARGS`` on a new pty, in a session of its own (Ctrl-C goes to its process group)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [str(HERMES), *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        cwd=home / "workspace",
        start_new_session=True,
        env={**os.environ, "COLUMNS": "80"},
    )
    os.close(follower)
    return proc, leader


def read_until(leader: int, proc: subprocess.Popen[bytes], wanted: bytes, timeout: float) -> bytes:
    out = b""
    deadline = time.monotonic() + timeout
    while wanted not in out and time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.1)
        if ready:
            try:
                out += os.read(leader, 4096)
            except OSError:  # the command ended and closed the pty
                break
        elif proc.poll() is not None:
            break
    return out


def test_a_long_call_shows_its_elapsed_time(home: Path) -> None:
    write_plugin(home, "naps", SLOW)
    proc, leader = spawn(home, "call", "nap")
    out = read_until(leader, proc, b"rested", 60)
    assert proc.wait(timeout=30) == 0
    os.close(leader)
    assert b"nap  1." in out and b"\r\x1b[K" in out and b"rested" in out


@pytest.mark.parametrize("tool", ["nap", "anap"])
def test_ctrl_c_ends_a_call_with_130(home: Path, tool: str) -> None:
    write_plugin(home, "naps", SLOW)
    proc, leader = spawn(home, "call", tool, "seconds=30")
    assert f"{tool}  1.".encode() in read_until(leader, proc, f"{tool}  1.".encode(), 60)  # the call runs
    started = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    code = proc.wait(timeout=20)
    rest = read_until(leader, proc, b"interrupted", 5)
    os.close(leader)
    assert code == 130 and b"hermes: interrupted" in rest
    assert time.monotonic() - started < 10  # not the 30 s of the tool


def test_ctrl_c_stops_the_mcp_server_with_130(home: Path) -> None:
    proc, leader = spawn(home, "mcp", "serve", "--http", "127.0.0.1:0")
    assert b"serving" in read_until(leader, proc, b"serving", 60)
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=20) == 130
    os.close(leader)


def test_a_workspace_that_does_not_exist_is_refused(home: Path, run: Run, tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent"
    result = run("--workspace", str(missing), "tools", "list")
    assert result.exit_code == 2 and "does not exist" in result.stderr
    (home / "config.toml").write_text(f'[session]\nworkspace = "{missing}"\n')
    result = run("tools", "list")
    assert result.exit_code == 2 and "[session] workspace" in result.stderr and str(missing) in result.stderr
