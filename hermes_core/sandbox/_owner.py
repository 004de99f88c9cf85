"""``sandbox_for(owner)``: the sandbox of a call's session, of a tool system, or the process-wide default."""

from __future__ import annotations

from typing import Any

from ._layout import SandboxRefused
from ._sandbox import Sandbox
from ._settings import settings_from_config

__all__ = ["sandbox_for"]

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
