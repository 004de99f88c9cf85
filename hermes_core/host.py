"""``Host``: what a tool may use of the tool system that runs it (``context.host``), and nothing more.

A handler sees the system through this narrow protocol: its configuration and folders, per-system and
per-session state, the approver and the human, the selection, and a way to call other tools through the full
pipeline (validation, policy hooks, approvals, limits). It never sees the registry, the plugin manager or the
pipeline itself. ``ToolSystem`` satisfies the protocol; each system hands its tools a ``SystemHost``, an adapter
that forwards exactly these members, so reaching past them is an ``AttributeError``, not a habit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from .config import Config
    from .decisions import CallOutcome
    from .plugins._hooks import HookRunner
    from .registry import ToolEntry
    from .selection.deferral import SearchResult
    from .session import Session

__all__ = ["AskUser", "Host", "SystemHost"]

T = TypeVar("T")
Names = Sequence[str] | str | None
AskUser = Callable[[str, Sequence[str] | None], str]
ToolCallSpec = tuple[str, Any] | Mapping[str, Any]


class Host(Protocol):
    """The tool system as its tools see it (``context.host``)."""

    @property
    def config(self) -> Config: ...

    @property
    def workspace(self) -> Path: ...

    @property
    def data_dir(self) -> Path: ...

    @property
    def cache_dir(self) -> Path: ...

    @property
    def session_id(self) -> str: ...

    @property
    def approver(self) -> Any: ...

    @property
    def ask_user(self) -> AskUser | None: ...

    @property
    def hooks(self) -> HookRunner: ...

    def tool(self, name: str) -> ToolEntry | None: ...

    def stash(self, key: str, factory: Callable[[], T], cleanup: Callable[[T], Any] | None = None) -> T: ...

    def unstash(self, key: str) -> Any: ...

    def plugin_config(self, name: str) -> dict[str, Any]: ...

    def session(self, session_id: str | None = None) -> Session: ...

    def close_session(self, session_id: str) -> bool: ...

    def on_close(self, callback: Callable[[], Any]) -> None: ...

    def available(
        self, enabled: Names = None, disabled: Names = None, disabled_tools: Names = None
    ) -> frozenset[str]: ...

    def invalidate_checks(self) -> None: ...

    def definitions(
        self,
        enabled: Names = None,
        disabled: Names = None,
        disabled_tools: Names = None,
        *,
        format: str = "openai",
        search: str | None = None,
        session_id: str | None = None,
    ) -> list[dict[str, Any]]: ...

    def search_tools(
        self,
        query: str,
        *,
        limit: int = 5,
        enabled: Names = None,
        disabled: Names = None,
        session_id: str | None = None,
        available: frozenset[str] | None = None,
        load: bool = True,
        everything: bool = False,
    ) -> SearchResult: ...

    def call_outcome(
        self,
        name: str,
        arguments: Any = None,
        *,
        enabled: Names = None,
        disabled: Names = None,
        session_id: str | None = None,
        call_id: str | None = None,
        approver: Any = None,
        ask_user: AskUser | None = None,
    ) -> CallOutcome: ...

    async def acall_outcome(
        self,
        name: str,
        arguments: Any = None,
        *,
        enabled: Names = None,
        disabled: Names = None,
        session_id: str | None = None,
        call_id: str | None = None,
        approver: Any = None,
        ask_user: AskUser | None = None,
    ) -> CallOutcome: ...

    def call_many_outcomes(
        self,
        calls: Iterable[ToolCallSpec],
        *,
        enabled: Names = None,
        disabled: Names = None,
        session_id: str | None = None,
        max_parallel: int | None = None,
        approver: Any = None,
        ask_user: AskUser | None = None,
    ) -> list[CallOutcome]: ...


class SystemHost:
    """The ``Host`` a ``ToolSystem`` hands its tools: forwards the protocol's members to the system (which
    satisfies ``Host`` itself) and exposes nothing else."""

    __slots__ = ("_system",)

    def __init__(self, system: Host) -> None:
        self._system = system

    def __repr__(self) -> str:
        return f"<Host of {self._system!r}>"

    @property
    def config(self) -> Config:
        return self._system.config

    @property
    def workspace(self) -> Path:
        return self._system.workspace

    @property
    def data_dir(self) -> Path:
        return self._system.data_dir

    @property
    def cache_dir(self) -> Path:
        return self._system.cache_dir

    @property
    def session_id(self) -> str:
        return self._system.session_id

    @property
    def approver(self) -> Any:
        return self._system.approver

    @property
    def ask_user(self) -> AskUser | None:
        return self._system.ask_user

    @property
    def hooks(self) -> HookRunner:
        hooks: HookRunner = self._system.hooks
        return hooks

    def tool(self, name: str) -> ToolEntry | None:
        return self._system.tool(name)

    def stash(self, key: str, factory: Callable[[], T], cleanup: Callable[[T], Any] | None = None) -> T:
        return self._system.stash(key, factory, cleanup)

    def unstash(self, key: str) -> Any:
        return self._system.unstash(key)

    def plugin_config(self, name: str) -> dict[str, Any]:
        return self._system.plugin_config(name)

    def session(self, session_id: str | None = None) -> Session:
        return self._system.session(session_id)

    def close_session(self, session_id: str) -> bool:
        return self._system.close_session(session_id)

    def on_close(self, callback: Callable[[], Any]) -> None:
        self._system.on_close(callback)

    def available(
        self, enabled: Names = None, disabled: Names = None, disabled_tools: Names = None
    ) -> frozenset[str]:
        return self._system.available(enabled, disabled, disabled_tools)

    def invalidate_checks(self) -> None:
        self._system.invalidate_checks()

    def definitions(
        self,
        enabled: Names = None,
        disabled: Names = None,
        disabled_tools: Names = None,
        *,
        format: str = "openai",
        search: str | None = None,
        session_id: str | None = None,
    ) -> list[dict[str, Any]]:
        return self._system.definitions(
            enabled, disabled, disabled_tools, format=format, search=search, session_id=session_id
        )

    def search_tools(
        self,
        query: str,
        *,
        limit: int = 5,
        enabled: Names = None,
        disabled: Names = None,
        session_id: str | None = None,
        available: frozenset[str] | None = None,
        load: bool = True,
        everything: bool = False,
    ) -> SearchResult:
        return self._system.search_tools(
            query,
            limit=limit,
            enabled=enabled,
            disabled=disabled,
            session_id=session_id,
            available=available,
            load=load,
            everything=everything,
        )

    def call_outcome(
        self,
        name: str,
        arguments: Any = None,
        *,
        enabled: Names = None,
        disabled: Names = None,
        session_id: str | None = None,
        call_id: str | None = None,
        approver: Any = None,
        ask_user: AskUser | None = None,
    ) -> CallOutcome:
        return self._system.call_outcome(
            name,
            arguments,
            enabled=enabled,
            disabled=disabled,
            session_id=session_id,
            call_id=call_id,
            approver=approver,
            ask_user=ask_user,
        )

    async def acall_outcome(
        self,
        name: str,
        arguments: Any = None,
        *,
        enabled: Names = None,
        disabled: Names = None,
        session_id: str | None = None,
        call_id: str | None = None,
        approver: Any = None,
        ask_user: AskUser | None = None,
    ) -> CallOutcome:
        return await self._system.acall_outcome(
            name,
            arguments,
            enabled=enabled,
            disabled=disabled,
            session_id=session_id,
            call_id=call_id,
            approver=approver,
            ask_user=ask_user,
        )

    def call_many_outcomes(
        self,
        calls: Iterable[ToolCallSpec],
        *,
        enabled: Names = None,
        disabled: Names = None,
        session_id: str | None = None,
        max_parallel: int | None = None,
        approver: Any = None,
        ask_user: AskUser | None = None,
    ) -> list[CallOutcome]:
        return self._system.call_many_outcomes(
            calls,
            enabled=enabled,
            disabled=disabled,
            session_id=session_id,
            max_parallel=max_parallel,
            approver=approver,
            ask_user=ask_user,
        )
