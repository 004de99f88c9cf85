"""The execution layer: every tool that runs code runs it here, behind walls made of the workspace.

The command guard decides what needs a human's approval; the sandbox decides what a command can reach.
A sandboxed command sees the system folders read-only, the interpreter and toolchains read-only, the
workspace read-write and a private ``/tmp``; it does not see the rest of ``$HOME``, hermes's config, data,
cache and plugins, or other users' files. Backends (``[sandbox] backend``): ``bwrap`` (bubblewrap:
mount, PID, IPC and optional network namespaces), ``landlock`` (the kernel's allow-list, no helper binary,
no PID namespace), ``none`` (explicit opt-out), ``auto`` (the strongest available, the default).

A tool (built-in or plugin) runs a command like this::

    from hermes_core.sandbox import Limits, sandbox_for

    def my_tool(path: str, *, context):
        box = sandbox_for(context)          # this tool system's sandbox (workspace, config, backend)
        result = box.run(["make", "-C", path], timeout=120, tool="my_tool",
                         limits=Limits(memory_mb=1024, max_output_bytes=20_000))
        return f"{result.output}\\n[exit code {result.exit_code}]"

``run()`` never leaves a process behind; ``start()`` returns a ``SandboxProcess`` for long-running ones
(``terminate()``, then ``release()``); ``SandboxRefused`` (a ``ToolError``) says when the walls cannot be
built, so it reaches the model as a clear message.
"""

from __future__ import annotations

from typing import Any

from ..context import calls_in_workspace
from ._capture import strip_ansi
from ._env import child_env, is_secret_name
from ._layout import HOME_SECRETS, Layout, SandboxRefused, hermes_dirs
from ._process import SandboxProcess
from ._sandbox import DEFAULT_OUTPUT_BYTES, Sandbox
from ._settings import BACKENDS, DEFAULT_TOOLCHAINS, Limits, SandboxSettings, settings_from_config
from ._status import GUARANTEES, LIMITATIONS, BackendChoice, choose_backend, report
from ._types import RunResult

__all__ = [
    "BACKENDS",
    "DEFAULT_OUTPUT_BYTES",
    "DEFAULT_TOOLCHAINS",
    "GUARANTEES",
    "HOME_SECRETS",
    "LIMITATIONS",
    "BackendChoice",
    "Layout",
    "Limits",
    "RunResult",
    "Sandbox",
    "SandboxProcess",
    "SandboxRefused",
    "SandboxSettings",
    "calls_in_workspace",
    "child_env",
    "choose_backend",
    "hermes_dirs",
    "is_secret_name",
    "report",
    "sandbox_for",
    "settings_from_config",
    "strip_ansi",
]

_STASH_KEY = "sandbox"
_unbound: Sandbox | None = None


def _make(system: Any) -> Sandbox:
    from ..config import ConfigError

    try:
        settings = settings_from_config(system.config)
    except ConfigError as err:
        raise SandboxRefused(f"the [sandbox] configuration is invalid: {err}") from None
    hidden = [system.data_dir, system.cache_dir]
    if system.config.path is not None:
        hidden.append(system.config.path)
    return Sandbox(settings, workspace=system.workspace, hidden=hidden)


def sandbox_for(owner: Any = None) -> Sandbox:
    """The sandbox of a tool system: pass the handler's ``context`` (or the ``ToolSystem``).

    It is made on first use from the system's ``[sandbox]`` configuration and closed with the system
    (every process still running in it is ended). Without a system, one process-wide default sandbox.
    """
    system = getattr(owner, "host", owner) if owner is not None else None
    if system is not None and hasattr(system, "stash"):
        sandbox: Sandbox = system.stash(_STASH_KEY, lambda: _make(system))
        return sandbox
    global _unbound
    if _unbound is None:
        _unbound = Sandbox()
    return _unbound
