"""The check shared by the tools that run code: hidden, with the reason and the fix, when commands cannot start."""

from __future__ import annotations

from typing import Any

from hermes_core import Unavailable
from hermes_core.fileio import which


def commands_can_start(system: Any) -> tuple[bool, str] | Unavailable:
    """Asks the session environment whether a command can start: the local one through the sandbox's own
    readiness (``hermes_core.sandbox.readiness``), any other kind through its probe."""
    from hermes_core.environments import configured_kind

    if configured_kind(system) == "local":
        from hermes_core.sandbox import readiness

        ready = readiness(system)
        return (True, "") if ready else Unavailable(ready.reason, fix=ready.fix)
    from hermes_core.environments import environment_status

    status = environment_status(system, refresh=True)
    if status.ready:
        return True, ""
    return Unavailable(f"the {status.kind} environment cannot start: {status.reason}", fix=status.fix)


def shell_can_start(system: Any) -> tuple[bool, str] | Unavailable:
    """``terminal`` and ``process`` also need bash."""
    if which("bash") is None:
        return Unavailable("bash is not installed", fix="install bash (apt install bash)")
    return commands_can_start(system)
