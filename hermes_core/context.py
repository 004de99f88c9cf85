"""The per-call context a handler receives when it declares a parameter named ``context``."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .errors import ToolError

if TYPE_CHECKING:
    from .environments import Environment
    from .host import AskUser, Host
    from .session import Session

__all__ = [
    "ApprovalDenied",
    "CallContext",
    "Guard",
    "approver_override",
    "calls_approved_by",
    "calls_in_workspace",
    "workspace_override",
]

T = TypeVar("T")
_unbound_stash: Any = None  # the stash of contexts made without a system (tests, scripts)
_WORKSPACE: ContextVar[Path | None] = ContextVar("hermes_workspace", default=None)


def workspace_override() -> Path | None:
    """The workspace set by an enclosing ``calls_in_workspace`` block, if any."""
    return _WORKSPACE.get()


@contextlib.contextmanager
def calls_in_workspace(path: str | Path) -> Iterator[Path]:
    """Tool calls made inside this block (same thread or task) run in ``path`` instead of the system's
    workspace: their ``context.workspace``, the path guard's and the sandbox's walls. Cron jobs use it to
    run where they were created."""
    resolved = Path(path).expanduser().resolve()
    token = _WORKSPACE.set(resolved)
    try:
        yield resolved
    finally:
        _WORKSPACE.reset(token)


_APPROVER: ContextVar[Any] = ContextVar("hermes_approver", default=None)


def approver_override() -> Any:
    """The approver set by an enclosing ``calls_approved_by`` block, if any."""
    return _APPROVER.get()


@contextlib.contextmanager
def calls_approved_by(approver: Any) -> Iterator[None]:
    """Tool calls made inside this block (same thread or task, and what they start) that bring no approver of
    their own are approved by ``approver`` instead of the system's. Scheduled jobs use it to run headless (the
    standing approvals still apply) even inside a host whose approver asks a person at a terminal."""
    token = _APPROVER.set(approver)
    try:
        yield
    finally:
        _APPROVER.reset(token)


class ApprovalDenied(ToolError):
    """A guard refused the call or nobody approved it; the call ends with status ``denied``."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="denied", retryable=False)


class Guard(Protocol):
    """The security gate of a tool system (see ``hermes_core.security``)."""

    def guard_command(self, command: str, context: CallContext) -> Any: ...

    def guard_path(self, path: str | Path, op: str, context: CallContext) -> Path: ...

    def request_approval(self, kind: str, subject: str, reason: str, context: CallContext) -> None: ...

    def classify_command(self, command: str, workspace: Path) -> Any: ...


class CallContext:
    """Who is calling and how to reach the user; handlers opt in with a ``context`` parameter.

    ``host`` is the tool system as tools see it (``hermes_core.host.Host``: config, stash, sessions, calls
    through the pipeline); ``session`` this conversation's state; ``environment`` where its commands and files
    live. ``guard_command`` and ``guard_path`` run the
    security layer and the approval flow: they return when the action may go ahead and raise ``ApprovalDenied``
    (a ``ToolError``) when it may not. ``approver`` is the approver of this call when its caller brought one
    (an MCP client, a chat UI), else None: the system's approver decides.
    """

    __slots__ = (
        "_asker",
        "_guard",
        "approver",
        "call_id",
        "enabled",
        "host",
        "session_id",
        "tool_name",
        "workspace",
    )

    def __init__(
        self,
        *,
        call_id: str = "",
        session_id: str = "default",
        workspace: Path | None = None,
        tool_name: str = "",
        host: Host | None = None,
        ask_user: AskUser | None = None,
        guard: Guard | None = None,
        enabled: frozenset[str] | None = None,
        approver: Any = None,
    ) -> None:
        self.call_id = call_id
        self.session_id = session_id
        self.workspace = workspace if workspace is not None else Path.cwd()
        self.tool_name = tool_name
        self.host = host
        self._asker = ask_user
        self._guard = guard
        self.enabled = enabled
        self.approver = approver

    def derive(self, *, call_id: str, tool_name: str) -> CallContext:
        """A copy for another call of the same session (same workspace, user, approver and guard)."""
        return CallContext(
            call_id=call_id,
            session_id=self.session_id,
            workspace=self.workspace,
            tool_name=tool_name,
            host=self.host,
            ask_user=self._asker,
            guard=self._guard,
            enabled=self.enabled,
            approver=self.approver,
        )

    @property
    def session(self) -> Session:
        """This call's session (its state is released when the session closes); without a host, one of its own."""
        if self.host is not None:
            return self.host.session(self.session_id)
        from .session import Session

        return Session(self.session_id)

    @property
    def environment(self) -> Environment:
        """This call's session environment (``hermes_core.environments.environment_for(context)``): where its
        commands and file operations happen, made on first use and closed with the session."""
        from .environments import environment_for

        return environment_for(self)

    @property
    def can_ask_user(self) -> bool:
        return self._asker is not None

    def ask_user(self, question: str, choices: Sequence[str] | None = None) -> str:
        """Ask the human a question through the host's callback and return the answer."""
        if self._asker is None:
            raise ToolError("no user is available to answer questions in this session", retryable=False)
        return self._asker(question, choices)

    def guard_command(self, command: str) -> Any:
        """Classify a shell command; ask for approval when it is dangerous. Returns the verdict."""
        if self._guard is None:
            raise ApprovalDenied("no security gate is configured; refusing to run commands")
        return self._guard.guard_command(command, self)

    def classify_command(self, command: str, workspace: str | Path | None = None) -> Any:
        """Judge a command without asking anyone (for commands that run later, such as a scheduled job's).

        Returns the guard's verdict (``.dangerous``, ``.hardline``, ``.reason``) for a command run in
        ``workspace`` (default: this call's workspace).
        """
        if self._guard is None:
            raise ApprovalDenied("no security gate is configured; refusing to run commands")
        where = Path(workspace) if workspace is not None else Path(self.workspace)
        return self._guard.classify_command(command, where)

    def guard_path(self, path: str | Path, op: str) -> Path:
        """Check a path for ``op`` ("read" or "write"); returns the resolved path when allowed."""
        if self._guard is None:
            raise ApprovalDenied("no security gate is configured; refusing file access")
        return self._guard.guard_path(path, op, self)

    def request_approval(self, subject: str, reason: str, kind: str = "tool") -> None:
        """Ask the human to approve ``subject`` (bound exactly); raises ``ApprovalDenied`` when refused."""
        if self._guard is None:
            raise ApprovalDenied(f"approval needed ({reason}) but nobody can approve it")
        self._guard.request_approval(kind, subject, reason, self)

    @property
    def data_dir(self) -> Path:
        """The data directory of this system (tools keep their state below it)."""
        if self.host is not None:
            return self.host.data_dir
        from . import paths

        return paths.data_dir()

    def stash(self, key: str, factory: Callable[[], T], cleanup: Callable[[T], Any] | None = None) -> T:
        """Per-system state (see ``ToolSystem.stash``; per-session state: ``context.session.stash``); without a
        host, one process-wide stash."""
        if self.host is not None:
            return self.host.stash(key, factory, cleanup)
        global _unbound_stash
        if _unbound_stash is None:
            from .stash import Stash

            _unbound_stash = Stash()
        return _unbound_stash.get(key, factory, cleanup)  # type: ignore[no-any-return]

    def plugin_config(self, name: str) -> dict[str, Any]:
        """The ``[plugins.<name>]`` section of the configuration (secrets resolved)."""
        if self.host is None:
            return {}
        return self.host.plugin_config(name)
