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

import importlib
from typing import TYPE_CHECKING, Any

from ..context import calls_in_workspace

if TYPE_CHECKING:
    from ._capture import strip_ansi
    from ._egress import EgressPolicy, EgressRefused
    from ._env import child_env, is_secret_name
    from ._hostrun import host_run_match
    from ._layout import HOME_SECRETS, Layout, SandboxRefused, hermes_dirs
    from ._netns import NetNamespace
    from ._owner import sandbox_for
    from ._process import SandboxProcess
    from ._proxy import EgressProxy
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

# Each public name is imported from its module on first use: a tool's check asks ``readiness`` without loading
# the process, namespace, seccomp and proxy machinery, which only a command that runs needs.
_HOMES = {
    "_capture": ("strip_ansi",),
    "_egress": ("EgressPolicy", "EgressRefused"),
    "_env": ("child_env", "is_secret_name"),
    "_hostrun": ("host_run_match",),
    "_layout": ("HOME_SECRETS", "Layout", "SandboxRefused", "hermes_dirs"),
    "_netns": ("NetNamespace",),
    "_owner": ("sandbox_for",),
    "_process": ("SandboxProcess",),
    "_proxy": ("EgressProxy",),
    "_ready": ("Readiness", "readiness"),
    "_sandbox": ("DEFAULT_OUTPUT_BYTES", "Sandbox", "proxy_env"),
    "_seccomp": ("FilterUnavailable", "filter_program"),
    "_settings": (
        "BACKENDS",
        "DEFAULT_HOST_RUN",
        "DEFAULT_LIMITS",
        "DEFAULT_REGISTRIES",
        "DEFAULT_TOOLCHAINS",
        "NETWORK_MODES",
        "EgressSettings",
        "Limits",
        "SandboxSettings",
        "settings_from_config",
    ),
    "_status": ("GUARANTEES", "LIMITATIONS", "BackendChoice", "choose_backend", "report"),
    "_types": ("NetPlan", "RunResult"),
}
_LAZY = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
