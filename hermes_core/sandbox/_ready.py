"""Can commands start here? The answer the checks of the tools that run code give the model and the doctor.

``readiness(owner)`` asks the tool system's sandbox (made from its ``[sandbox]`` configuration) whether a command
could start in its workspace now: a usable backend and walls that can be built there. It is the one question a
tool's check asks, so an execution layer that grows (environments, remote kinds) answers it in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._layout import SandboxRefused

__all__ = ["Readiness", "readiness"]

_INSTALL = "install bubblewrap (Debian/Ubuntu: apt install bubblewrap)"


@dataclass(frozen=True, slots=True)
class Readiness:
    """``ok`` when commands can start; otherwise ``reason`` says why and ``fix`` what to change."""

    ok: bool
    reason: str = ""
    fix: str = ""

    def __bool__(self) -> bool:
        return self.ok


def _backend_fix(requested: str) -> str:
    if requested == "auto":
        return f'{_INSTALL}, or set [sandbox] backend = "none" to run commands without walls'
    if requested == "bwrap":
        return f'{_INSTALL}, or set [sandbox] backend = "auto" to use the strongest backend this machine has'
    return f'set [sandbox] backend = "auto" (or "bwrap" and {_INSTALL})'


def readiness(owner: Any) -> Readiness:
    """Whether a command can start in the sandbox of ``owner`` (a ``ToolSystem`` or a handler's ``context``).

    Cheap after the first answer: the backend probe is cached per process and the layout per sandbox.
    """
    from ._owner import sandbox_for

    try:
        box = sandbox_for(owner)
    except SandboxRefused as err:
        return Readiness(
            False, f"commands cannot run: {err.message}", "fix the [sandbox] table of the config"
        )
    choice = box.choice
    if choice.backend is None:
        reason = choice.reason.partition("; install")[0].partition("; choose")[0]
        return Readiness(False, f"commands cannot run: {reason}", _backend_fix(choice.requested))
    try:
        box.layout()
    except SandboxRefused as err:
        return Readiness(
            False,
            f"commands cannot run in the workspace {box.workspace}: {err.message}",
            "run hermes from a project folder (or pass --workspace)",
        )
    return Readiness(True)
