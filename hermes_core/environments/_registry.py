"""The kinds of environment a tool system knows, and the one environment of each session.

Built-in kinds are named in ``BUILTIN_KINDS`` and imported on first use; plugins add theirs through the
``register_environments`` hook (a mapping ``{kind: Environment subclass}``), collected once per tool system.
``environment_for(context)`` is the session's environment: made on first use from ``[environment] kind`` and
closed with the session (``system.close_session``, an MCP client leaving, ``system.close()``).
"""

from __future__ import annotations

import atexit
import importlib
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import ConfigError
from ..decisions import Unavailable
from ._base import Environment, EnvironmentSpec, EnvironmentStatus, EnvironmentUnavailable
from ._settings import RESERVED_KINDS, settings_from_config, settings_kind

__all__ = [
    "BUILTIN_KINDS",
    "Kinds",
    "environment_check",
    "environment_for",
    "environment_kinds",
    "environment_spec",
    "environment_status",
]

# kind -> "module:class", imported when a session first needs it
BUILTIN_KINDS: dict[str, str] = {
    "local": "hermes_core.environments._local:LocalEnvironment",
    "container": "hermes_core.environments._container:ContainerEnvironment",
    "ssh": "hermes_core.environments._ssh:SshEnvironment",
}
_HOOK = "register_environments"
_KINDS_KEY = "environments.kinds"
_STATUS_KEY = "environments.status"
_STATUS_TTL = 30.0


@dataclass(slots=True)
class Kinds:
    """The kinds one tool system can make: the built-ins and what plugins registered (``errors``: what they
    registered wrongly, for the doctor)."""

    plugins: dict[str, type[Environment]] = field(default_factory=dict)
    owners: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def names(self) -> list[str]:
        return sorted({*BUILTIN_KINDS, *self.plugins})

    def get(self, kind: str) -> type[Environment]:
        """The class of ``kind``; ``EnvironmentUnavailable`` (with the known names) when there is none."""
        found = self.plugins.get(kind)
        if found is not None:
            return found
        target = BUILTIN_KINDS.get(kind)
        if target is None:
            known = ", ".join(self.names())
            if kind in RESERVED_KINDS:
                raise EnvironmentUnavailable(
                    f"the {kind!r} environment is not part of this version of hermes-tools (kinds here: "
                    f"{known}); set [environment] kind to one of them"
                )
            raise EnvironmentUnavailable(
                f"no environment kind {kind!r}: install the plugin that provides it, or choose one of {known} "
                "in [environment] kind"
            )
        module, _, name = target.partition(":")
        cls: type[Environment] = getattr(importlib.import_module(module), name)
        return cls


def _collect(host: Any) -> Kinds:
    kinds = Kinds()
    runner = getattr(host, "hooks", None)
    pm = getattr(runner, "pm", None)
    if runner is None or pm is None or getattr(pm.hook, _HOOK, None) is None:
        return kinds
    for step in runner.each(_HOOK, {}):
        where = f"plugin {step.plugin_name!r}"
        if step.error is not None:
            kinds.errors.append(f"{where}: {_HOOK} failed ({type(step.error).__name__}: {step.error})")
            continue
        if step.value is None:
            continue
        if not isinstance(step.value, Mapping):
            kinds.errors.append(f"{where}: {_HOOK} must return a mapping {{kind: Environment subclass}}")
            continue
        for name, cls in step.value.items():
            if not isinstance(name, str) or not name:
                kinds.errors.append(f"{where}: an environment kind needs a non-empty name, not {name!r}")
            elif name in RESERVED_KINDS:
                kinds.errors.append(
                    f"{where}: the environment kind {name!r} is built in and cannot be replaced"
                )
            elif not (isinstance(cls, type) and issubclass(cls, Environment)):
                kinds.errors.append(f"{where}: kind {name!r} must be an Environment subclass, not {cls!r}")
            elif name in kinds.plugins:
                kinds.errors.append(
                    f"{where}: kind {name!r} is already registered by plugin {kinds.owners[name]!r}"
                )
            else:
                kinds.plugins[name] = cls
                kinds.owners[name] = step.plugin_name
    return kinds


def environment_kinds(host: Any) -> Kinds:
    """The kinds the tool system ``host`` (a ``ToolSystem`` or a ``Host``) can make, collected once."""
    if host is None or not hasattr(host, "stash"):
        return Kinds()
    kinds: Kinds = host.stash(_KINDS_KEY, lambda: _collect(host))
    return kinds


def environment_spec(host: Any, session_id: str, workspace: Path, kind: str | None = None) -> EnvironmentSpec:
    """The ``EnvironmentSpec`` a kind gets for ``session_id`` in ``workspace`` from ``host``'s configuration."""
    config = getattr(host, "config", None)
    try:
        settings = settings_from_config(config)
    except ConfigError as err:
        raise EnvironmentUnavailable(f"the [environment] configuration is invalid: {err}") from None
    name = kind or settings.kind
    data_dir = Path(getattr(host, "data_dir", None) or _default_data_dir())
    cache_dir = getattr(host, "cache_dir", None)
    hidden = [data_dir]
    if cache_dir is not None:
        hidden.append(Path(cache_dir))
    if config is not None and config.path is not None:
        hidden.append(Path(config.path))
    return EnvironmentSpec(
        kind=name,
        session_id=session_id,
        workspace=Path(workspace),
        settings=settings.table(name),
        config=config,
        state_dir=data_dir / "environments" / name,
        hidden=tuple(hidden),
        host_read_only=(data_dir / "results",),
        approve=_approver(host, session_id),
    )


def _approver(host: Any, session_id: str) -> Callable[[str, str, str], bool] | None:
    """The tool system's approval flow for ``session_id``, as ``approve(kind, subject, reason)``."""
    owner = getattr(host, "_system", host)  # a context's host is the system's narrow adapter
    new_context = getattr(owner, "_new_context", None)
    if new_context is None:
        return None

    def approve(kind: str, subject: str, reason: str) -> bool:
        from ..context import ApprovalDenied

        context = new_context(
            f"environment-{kind}", session_id, f"environment {kind}", frozenset(), None, None
        )
        try:
            context.request_approval(subject, reason, kind=kind)
        except ApprovalDenied:
            return False
        return True

    return approve


def _default_data_dir() -> Path:
    from .. import paths

    return paths.data_dir()


def _make(host: Any, session_id: str, workspace: Path) -> Environment:
    spec = environment_spec(host, session_id, workspace)
    cls = environment_kinds(host).get(spec.kind)
    return cls(spec)


def environment_for(owner: Any) -> Environment:
    """The environment of a call's session: pass the handler's ``context``.

    Made on first use from the configuration (``[environment] kind``) for the call's session and workspace, and
    closed when that session closes. Raises ``EnvironmentUnavailable`` (a ``ToolError``) when it cannot start.
    Without a tool system (a bare ``CallContext``), one process-wide environment per workspace.
    """
    host = getattr(owner, "host", None)
    workspace = Path(getattr(owner, "workspace", None) or Path.cwd())
    session_id = str(getattr(owner, "session_id", "") or "default")
    if host is None:
        return _unbound(workspace)
    session = host.session(session_id)
    env: Environment = session.stash(
        f"environment:{workspace}", lambda: _make(host, session_id, workspace), _close_quietly
    )
    return env


def _close_quietly(env: Environment) -> None:
    env.close()


_unbound_envs: dict[Path, Environment] = {}
_unbound_lock = threading.Lock()


def _unbound(workspace: Path) -> Environment:
    with _unbound_lock:
        env = _unbound_envs.get(workspace)
        if env is None:
            if not _unbound_envs:
                atexit.register(_close_unbound)
            env = _unbound_envs[workspace] = _make(None, "default", workspace)
        return env


def _close_unbound() -> None:
    with _unbound_lock:
        envs = list(_unbound_envs.values())
        _unbound_envs.clear()
    for env in envs:
        try:
            env.close()
        except Exception:  # at exit: nothing left to report to
            continue


def environment_status(host: Any, *, refresh: bool = False) -> EnvironmentStatus:
    """Whether the configured kind can start for ``host``'s workspace (its ``probe``), cached for 30 seconds."""
    now = time.monotonic()
    box: dict[str, Any] = host.stash(_STATUS_KEY, dict) if hasattr(host, "stash") else {}
    cached = box.get("status")
    if cached is not None and not refresh and now - box.get("at", 0.0) < _STATUS_TTL:
        status: EnvironmentStatus = cached
        return status
    try:
        spec = environment_spec(host, "probe", Path(getattr(host, "workspace", None) or Path.cwd()))
        cls = environment_kinds(host).get(spec.kind)
        status = cls.probe(spec)
    except EnvironmentUnavailable as err:
        kind = settings_kind(host)
        status = EnvironmentStatus(kind=kind, ready=False, reason=err.message, files_ready=False)
    box["status"], box["at"] = status, now
    return status


def environment_check(host: Any, *, files: bool = False) -> tuple[bool, str] | Unavailable:
    """A tool check: ``(True, "")`` when the session environment can run commands (``files=True``: serve the
    file tools), else ``Unavailable(why, fix=...)`` so the tool is hidden with the reason and the fix."""
    if files and settings_kind(host) == "local":
        return True, ""  # local file operations need no sandbox backend: nothing to probe
    status = environment_status(host, refresh=True)  # the check's own time-to-live decides how often
    ok = status.files_usable if files else status.ready
    if ok:
        return True, ""
    return Unavailable(f"the {status.kind} environment cannot start: {status.reason}", fix=status.fix)
