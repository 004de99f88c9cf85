"""Environments: where a session's commands and file operations happen.

Each session (the system's own, an agent run, one MCP client connection, one ``hermes call``) gets one
environment, made on first use from ``[environment] kind`` and closed with the session. Tools reach it with
``environment_for(context)`` and never need to know where it runs:

- ``local`` (the default): this machine, behind the walls of ``hermes_core.sandbox`` (bwrap or Landlock), with a
  private ``/tmp`` per session that the file tools see too;
- ``container``: a container per session or workspace (podman or Docker, through its CLI), made on first use,
  removed when the session ends unless kept (``[environment.container]``);
- ``ssh``: a remote host over one SSH connection per session, host key checked against ``known_hosts``
  (``[environment.ssh]``);
- plugin kinds, registered through the ``register_environments`` hook (``hookspecs.md``): a Kubernetes
  agent-sandbox, Modal, Daytona, Firecracker...

A tool (built-in or plugin) uses its session's environment like this::

    from hermes_core.environments import environment_for

    def build(target: str, *, context):
        env = environment_for(context)
        result = env.run(f"make {target}", timeout=600, tool="build")   # in the session's shell
        env.write("build.log", result.output.encode())                   # beneath the environment's roots
        return f"{result.output}\\n[exit code {result.exit_code}]"

**Commands.** ``run(command)`` runs to the end and returns a ``CommandResult``; ``start(command, pty=...)``
returns a ``Process`` (``read``, ``write``, ``close_stdin``, ``wait``, ``terminate``, ``close``). A string is a
shell command line run in the session's shell state; a sequence is an argv run without a shell.

**What persists between shell commands of a session**: the working directory (only inside the workspace,
``/tmp`` and the folders ``[sandbox] read_write`` grants, links resolved: a command may ``cd`` anywhere it can
see, but the next one starts back in the workspace, with a note, when it ended elsewhere), exported and plain
shell variables (``unset`` included), functions, aliases and ``set``/``shopt`` options, so
``source .venv/bin/activate`` and ``deactivate`` work across calls. A command that times out or is killed
changes nothing: the next one starts from the state before it. Not kept: background jobs of the shell itself
(use ``start``), traps, the directory stack, and anything of a command's process that is not shell state.
Per-call ``env`` variables are for that command only.

**Files.** ``resolve``, ``stat``, ``open_read``, ``write`` (atomic), ``remove``, ``listdir``, with the
environment's own paths. The local kind opens every path beneath a directory descriptor of one of its roots
(``openat2`` with ``RESOLVE_BENEATH``): the workspace, the session's ``/tmp``, the folders ``[sandbox]`` grants,
and read-only the system folders and toolchains a command sees; hidden paths stay hidden. A path outside fails
with ``PathOutsideRoots`` whatever the path guard said, so the file tools hold even with the guard off.

**Writing a kind.** Subclass ``Environment``, implement its abstract methods (``RootedFiles`` gives the file
operations for folders on this host's disk; ``ShellSession`` gives the session-shell protocol any kind can
drive), override ``probe`` to say whether it can start here (an unusable kind hides the tools that need it,
with the reason), and return ``{"my-kind": MyEnvironment}`` from ``register_environments``. It is chosen with
``[environment] kind = "my-kind"`` and gets ``[environment.my-kind]`` as ``EnvironmentSpec.settings``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._base import (
        CommandResult,
        Environment,
        EnvironmentSpec,
        EnvironmentStatus,
        EnvironmentUnavailable,
        FileInfo,
        NotRegularFile,
        PathOutsideRoots,
        Process,
        ReadOnlyPath,
    )
    from ._local import LocalEnvironment
    from ._registry import (
        BUILTIN_KINDS,
        Kinds,
        environment_check,
        environment_for,
        environment_kinds,
        environment_spec,
        environment_status,
    )
    from ._rooted import Root, RootedFiles
    from ._settings import DEFAULT_KIND, RESERVED_KINDS, EnvironmentSettings, settings_from_config
    from ._settings import settings_kind as configured_kind
    from ._shell import WRAPPER as SHELL_WRAPPER
    from ._shell import ShellSession, ShellState
    from ._shell import argv as shell_argv

__all__ = [
    "BUILTIN_KINDS",
    "DEFAULT_KIND",
    "RESERVED_KINDS",
    "SHELL_WRAPPER",
    "CommandResult",
    "Environment",
    "EnvironmentSettings",
    "EnvironmentSpec",
    "EnvironmentStatus",
    "EnvironmentUnavailable",
    "FileInfo",
    "Kinds",
    "LocalEnvironment",
    "NotRegularFile",
    "PathOutsideRoots",
    "Process",
    "ReadOnlyPath",
    "Root",
    "RootedFiles",
    "ShellSession",
    "ShellState",
    "configured_kind",
    "environment_check",
    "environment_for",
    "environment_kinds",
    "environment_spec",
    "environment_status",
    "settings_from_config",
    "shell_argv",
]

# Each public name is imported from its module on first use: a tool's check asks ``configured_kind`` without
# loading the local kind, the shell session and the sandbox beneath them.
_HOMES: dict[str, tuple[str, ...]] = {
    "_base": (
        "CommandResult",
        "Environment",
        "EnvironmentSpec",
        "EnvironmentStatus",
        "EnvironmentUnavailable",
        "FileInfo",
        "NotRegularFile",
        "PathOutsideRoots",
        "Process",
        "ReadOnlyPath",
    ),
    "_local": ("LocalEnvironment",),
    "_registry": (
        "BUILTIN_KINDS",
        "Kinds",
        "environment_check",
        "environment_for",
        "environment_kinds",
        "environment_spec",
        "environment_status",
    ),
    "_rooted": ("Root", "RootedFiles"),
    "_settings": ("DEFAULT_KIND", "RESERVED_KINDS", "EnvironmentSettings", "settings_from_config"),
    "_shell": ("ShellSession", "ShellState"),
}
_LAZY = {name: (module, name) for module, names in _HOMES.items() for name in names}
_LAZY.update(
    configured_kind=("_settings", "settings_kind"),
    SHELL_WRAPPER=("_shell", "WRAPPER"),
    shell_argv=("_shell", "argv"),
)


def __getattr__(name: str) -> Any:
    home = _LAZY.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home[0]}"), home[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
