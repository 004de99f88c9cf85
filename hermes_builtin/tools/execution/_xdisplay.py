"""The X display ``computer_use`` acts on, and its X clients (xdotool, ffmpeg's x11grab) run in the sandbox.

The display is ``[plugins.computer_use] display`` or ``$DISPLAY``; only local displays (``:N``) are used: their
socket ``/tmp/.X11-unix/XN`` is the one thing the clients see beyond the sandbox's usual view (and
``$XAUTHORITY``'s cookie file when there is one). The clients run with no network and a sandbox of their own,
made from the tool system's (same backend, walls and hidden folders) with ``AF_UNIX`` sockets allowed, which an
X client needs to reach the server. Not in the session's environment: the display belongs to this machine whatever
kind the session uses, and an environment offers no way to let one socket through its walls.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

from hermes_core import ToolError, Unavailable
from hermes_core.fileio import which

SECTION = "computer_use"
SOCKETS = Path("/tmp/.X11-unix")
_LOCAL = re.compile(r"^(?:unix)?:(\d{1,5})(?:\.(\d{1,3}))?$")
NO_DISPLAY = 'no X display: set DISPLAY or [plugins.computer_use] display (e.g. ":99" of an Xvfb started with Xvfb :99)'


class DisplayProblem(ValueError):
    """Why the display cannot be used; ``by_design`` when none is configured at all."""

    def __init__(self, message: str, *, by_design: bool = False, fix: str = "") -> None:
        super().__init__(message)
        self.by_design = by_design
        self.fix = fix


class Display(NamedTuple):
    name: str  # ":99"
    socket: Path
    xauthority: Path | None
    timeout: float

    def env(self) -> dict[str, str]:
        env = {"DISPLAY": self.name}
        if self.xauthority is not None:
            env["XAUTHORITY"] = str(self.xauthority)
        return env


def display_of(section: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Display:
    """The configured display, checked; ``DisplayProblem`` says what is wrong."""
    environ = os.environ if environ is None else environ
    name = section.get("display") or environ.get("DISPLAY", "")
    if not isinstance(name, str) or not name.strip():
        raise DisplayProblem(NO_DISPLAY, by_design=True)
    name = name.strip()
    local = _LOCAL.match(name)
    if local is None:
        raise DisplayProblem(
            f"display {name!r} is not a local X display (:N); computer_use reaches only displays of this machine"
        )
    socket = SOCKETS / f"X{local.group(1)}"
    if not socket.exists():
        raise DisplayProblem(
            f"X display {name} is not running (no {socket})", fix=f"start it, e.g. Xvfb {name} &"
        )
    raw = section.get("xauthority") or environ.get("XAUTHORITY")
    xauthority = Path(raw).expanduser() if isinstance(raw, str) and raw.strip() else None
    if xauthority is not None and not xauthority.is_file():
        xauthority = None  # a stale variable: servers without access control need none
    timeout = section.get("timeout", 15)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise DisplayProblem(
            f"[plugins.{SECTION}] timeout must be a positive number of seconds, got {timeout!r}"
        )
    missing = [tool for tool in ("xdotool", "ffmpeg") if which(tool) is None]
    if missing:
        raise DisplayProblem(
            f"needs {' and '.join(missing)} (apt install {' '.join(missing)})",
            fix=f"apt install {' '.join(missing)}",
        )
    return Display(
        f":{local.group(1)}" + (f".{local.group(2)}" if local.group(2) else ""), socket, xauthority, timeout
    )


def check(system: Any) -> tuple[bool, str] | Unavailable:
    """Shown when a local X display, xdotool and ffmpeg are there and commands can run."""
    from hermes_core.sandbox import readiness

    try:
        display_of(system.plugin_config(SECTION))
    except DisplayProblem as problem:
        return Unavailable(str(problem), by_design=problem.by_design, fix=problem.fix)
    ready = readiness(system)
    return (True, "") if ready else Unavailable(ready.reason, fix=ready.fix)


def _client_sandbox(context: Any) -> Any:
    from hermes_core.sandbox import Sandbox, sandbox_for

    def make() -> Sandbox:
        base = sandbox_for(context)
        settings = replace(base.settings, unix_sockets=True)
        return Sandbox(settings, workspace=base.workspace, hidden=base.hidden_paths())

    return context.stash("computer_use.sandbox", make, Sandbox.close)


def run_client(context: Any, display: Display, argv: list[str], read_write: list[Path] | None = None) -> str:
    """Run an X client in the sandbox; its output, or ``ToolError`` with its complaint."""
    box = _client_sandbox(context)
    visible = [display.socket, *([display.xauthority] if display.xauthority else [])]
    result = box.run(
        argv,
        workspace=str(context.workspace),
        env=display.env(),
        network="off",
        tool="computer_use",
        timeout=display.timeout,
        split_output=True,
        stderr_bytes=4000,
        read_only=visible,
        read_write=read_write or [],
    )
    if result.timed_out:
        raise ToolError(f"{argv[0]} did not finish within {display.timeout:g} s on {display.name}")
    if result.exit_code != 0:
        lines = [ln for ln in result.stderr.strip().splitlines() if ln.strip()]
        raise ToolError(
            f"{argv[0]} failed on {display.name}: {lines[-1][:300] if lines else 'no reason given'}"
        )
    return str(result.stdout)
