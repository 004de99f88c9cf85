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
built, so it reaches the model as a clear message. ``readiness(context)`` says beforehand whether a command can
start at all (the checks of the tools that run code hide them, with the reason and the fix, when it cannot).

Walls besides the view, on both backends: no capabilities and ``no_new_privs``; a system-call filter
(``filter_program``: no mount, handle-based opens, new user namespaces, keyrings, io_uring, bpf, device nodes,
terminal injection, set-user-ID bits, or ``AF_UNIX`` sockets beyond ``socketpair``); limits on processes,
memory, CPU, file size, output and free disk (``DEFAULT_LIMITS``); files the host runs later
(``DEFAULT_HOST_RUN``) read-only inside. Network "on" means the sandbox's own network namespace whose only
exit is hermes's proxy (``[sandbox.network]``: a domain allow-list, approval for other names, the SSRF
policy); "off" means none; "host" the host's network (an explicit choice).

Code that runs commands for a sandbox by other means (an environment that keeps a shell, say) uses the same
network: ``namespace, proxy = box.egress()`` gives the ``NetNamespace`` to join (``namespace.enter_argv()``
as a launcher prefix, ``namespace.enterer()`` between fork and exec; None on Landlock's fallback, where
``proxy.port`` on the host's loopback is the one port allowed) and ``proxy_env(port)`` the variables that
point tools at the proxy; ``filter_program(inet, unix_sockets)`` is the filter's BPF program; and
``box.is_host_run(path)`` (or ``host_run_match``) says whether a file operation would write a file the host
runs later, so it can ask first as the file tools do.
"""

from __future__ import annotations

from typing import Any

from ..context import calls_in_workspace
from ._capture import strip_ansi
from ._env import child_env, is_secret_name
from ._hostrun import host_run_match
from ._layout import HOME_SECRETS, Layout, SandboxRefused, hermes_dirs
from ._netns import NetNamespace
from ._process import SandboxProcess
from ._ready import Readiness, readiness
from ._sandbox import DEFAULT_OUTPUT_BYTES, Sandbox, proxy_env
from ._seccomp import FilterUnavailable, filter_program
from ._settings import (
    BACKENDS,
    DEFAULT_HOST_RUN,
    DEFAULT_LIMITS,
    DEFAULT_REGISTRIES,
    DEFAULT_TOOLCHAINS,
    NETWORK_MODES,
    EgressSettings,
    Limits,
    SandboxSettings,
    settings_from_config,
)
from ._status import GUARANTEES, LIMITATIONS, BackendChoice, choose_backend, report
from ._types import NetPlan, RunResult

__all__ = [
    "BACKENDS",
    "DEFAULT_HOST_RUN",
    "DEFAULT_LIMITS",
    "DEFAULT_OUTPUT_BYTES",
    "DEFAULT_REGISTRIES",
    "DEFAULT_TOOLCHAINS",
    "GUARANTEES",
    "HOME_SECRETS",
    "LIMITATIONS",
    "NETWORK_MODES",
    "BackendChoice",
    "EgressPolicy",
    "EgressProxy",
    "EgressRefused",
    "EgressSettings",
    "FilterUnavailable",
    "Layout",
    "Limits",
    "NetNamespace",
    "NetPlan",
    "Readiness",
    "RunResult",
    "Sandbox",
    "SandboxProcess",
    "SandboxRefused",
    "SandboxSettings",
    "calls_in_workspace",
    "child_env",
    "choose_backend",
    "filter_program",
    "hermes_dirs",
    "host_run_match",
    "is_secret_name",
    "proxy_env",
    "readiness",
    "report",
    "sandbox_for",
    "settings_from_config",
    "strip_ansi",
]

_LAZY = {"EgressPolicy": "_egress", "EgressRefused": "_egress", "EgressProxy": "_proxy"}


def __getattr__(name: str) -> Any:
    # the proxy and its policy load the security layer: only when the network is first used
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


_STASH_KEY = "sandbox"
_unbound: Sandbox | None = None


class _SessionWalls:
    """A session's own sandbox and private ``/tmp`` when its environment is not the local one."""

    def __init__(self, system: Any, workspace: Any) -> None:
        import shutil
        import tempfile
        import weakref
        from pathlib import Path

        self.tmp = Path(tempfile.mkdtemp(prefix="hermes-session-"))
        self.sandbox = _make(system, workspace=workspace, tmp=self.tmp)
        self._remove_tmp = weakref.finalize(self, shutil.rmtree, str(self.tmp), True)

    def close(self) -> None:
        self.sandbox.close()
        self._remove_tmp()


def _session_sandbox(context: Any) -> Sandbox:
    from ..environments import EnvironmentUnavailable, environment_for

    try:
        box = getattr(environment_for(context), "sandbox", None)
    except EnvironmentUnavailable:
        box = None
    if isinstance(box, Sandbox):
        return box
    walls: _SessionWalls = context.session.stash(
        f"sandbox:{context.workspace}", lambda: _SessionWalls(context.host, context.workspace)
    )
    return walls.sandbox


def _make(system: Any, workspace: Any = None, tmp: Any = None) -> Sandbox:
    from ..config import ConfigError

    try:
        settings = settings_from_config(system.config)
    except ConfigError as err:
        raise SandboxRefused(f"the [sandbox] configuration is invalid: {err}") from None
    hidden = [system.data_dir, system.cache_dir]
    if system.config.path is not None:
        hidden.append(system.config.path)
    return Sandbox(
        settings,
        workspace=workspace or system.workspace,
        hidden=hidden,
        tmp=tmp,
        network_approval=_network_approval(system),
    )


def _network_approval(system: Any) -> Any:
    """Asks the tool system's approval flow (kind "network", the host name as subject) from the proxy's thread."""
    owner = getattr(system, "_system", system)  # a context's host is the system's narrow adapter
    new_context = getattr(owner, "_new_context", None)
    if new_context is None:
        return None

    def approve(host: str, reason: str) -> bool:
        from ..context import ApprovalDenied

        context = new_context("sandbox-network", None, "sandbox network", frozenset(), None, None)
        try:
            context.request_approval(host, reason, kind="network")
        except ApprovalDenied:
            return False
        return True

    return approve


def sandbox_for(owner: Any = None) -> Sandbox:
    """The sandbox of a call's session: pass the handler's ``context`` (or a ``ToolSystem`` for the system's).

    A call's sandbox is its session's (made on first use from the ``[sandbox]`` configuration, closed with the
    session): its ``/tmp`` is the session's private one, the same folder the file tools and ``terminal`` see.
    A system's is made the same way and closed with the system. Without a system, one process-wide default.
    """
    # a call's context (a ToolSystem has a host and a session id too, but no call: it gets the system's own)
    if owner is not None and hasattr(owner, "call_id") and getattr(owner, "host", None) is not None:
        return _session_sandbox(owner)
    system = getattr(owner, "host", owner) if owner is not None else None
    if system is not None and hasattr(system, "stash"):
        sandbox: Sandbox = system.stash(_STASH_KEY, lambda: _make(system))
        return sandbox
    global _unbound
    if _unbound is None:
        _unbound = Sandbox()
    return _unbound
