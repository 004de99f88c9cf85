"""MCP servers as a source of tools: each server in ``[mcp.servers.NAME]`` becomes the toolset ``mcp-NAME``.

Servers connect in the background on an event loop of their own (one thread per system, started only when a
server is configured), so ``ToolSystem.load()`` never waits for them, and a sync ``system.call`` made from inside
the system's async loop cannot starve the sessions it needs.
A stdio server is started from ``command``/``args``/``env``/``cwd`` (its stderr goes to
``<data dir>/logs/mcp-NAME.log``); an HTTP server is reached at ``url`` with ``headers`` over streamable HTTP.
``env`` and ``headers`` values may be ``{env = "VAR"}`` or ``{file = "path"}`` secrets.

After the handshake every listed tool is registered with the server's input schema, so arguments are checked
before they leave. A name providers refuse is rewritten (``a.b`` -> ``a_b``); a name that clashes with a
non-MCP tool is skipped and reported in ``status()``. A ``tools/list_changed`` notification re-lists the tools;
a server that goes away loses its tools at once and is reconnected with backoff (a few attempts); closing the
system stops every server process.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import contextlib
import importlib.util
import json
import logging
import re
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from .config import resolve_secret
from .errors import ToolError
from .registry import Provenance, RegistrationError, ToolNameConflict, provenance

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import CallToolResult, Tool

    from .system import ToolSystem

__all__ = [
    "DEFAULT_TIMEOUT",
    "MIN_START_TIMEOUT",
    "render_result",
    "safe_tool_name",
    "start_servers",
    "status",
    "wait_ready",
]

log = logging.getLogger("hermes.mcp")

DEFAULT_TIMEOUT = 60.0
"""Seconds a server may take to answer one call or one re-listing of its tools (the ``timeout`` key overrides)."""

MIN_START_TIMEOUT = 30.0
"""Start-up (spawn, handshake, first listing) gets ``max(timeout, MIN_START_TIMEOUT)``: a short call timeout
must not fail a server that is slow to start (``npx`` fetching a package, say)."""

State = Literal["connecting", "ready", "failed", "disabled", "closed"]

_RECONNECT_ATTEMPTS = 5
_FIRST_BACKOFF = 0.5
_MAX_BACKOFF = 30.0
_STABLE_AFTER = 60.0  # a session that lived this long earns a fresh set of reconnect attempts
_CLOSE_WAIT = 10.0
_LOG_LIMIT = 1_000_000  # bytes of a server's stderr log kept before it starts over
_BAD_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64


# -- names and results -------------------------------------------------------------------------------


def safe_tool_name(name: str) -> str:
    """A name every provider accepts (letters, digits, ``_``, ``-``; 64 chars; no leading digit or dash)."""
    out = _BAD_CHARS.sub("_", name)[:_MAX_NAME] or "tool"
    if not (out[0].isalpha() or out[0] == "_"):
        out = ("_" + out)[:_MAX_NAME]
    return out


def _unique(base: str, taken: Mapping[str, object]) -> str:
    if base not in taken:
        return base
    number = 2
    while True:
        suffix = f"_{number}"
        candidate = base[: _MAX_NAME - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
        number += 1


def _b64_size(data: str) -> int:
    stripped = data.rstrip("=")
    return len(stripped) * 3 // 4


def render_result(result: CallToolResult) -> str:
    """The text the model sees for an MCP tool result: text parts in order, other parts summarised."""
    from mcp.types import (
        AudioContent,
        BlobResourceContents,
        EmbeddedResource,
        ImageContent,
        ResourceLink,
        TextContent,
    )

    parts: list[str] = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, (ImageContent, AudioContent)):
            parts.append(f"[{block.type}: {_b64_size(block.data)} bytes, {block.mime_type}]")
        elif isinstance(block, EmbeddedResource):
            res = block.resource
            if isinstance(res, BlobResourceContents):
                mime = f", {res.mime_type}" if res.mime_type else ""
                parts.append(f"[resource {res.uri}: {_b64_size(res.blob)} bytes{mime}]")
            else:
                parts.append(res.text)
        elif isinstance(block, ResourceLink):
            parts.append(f"[resource link: {block.uri}]")
        else:
            parts.append(f"[{getattr(block, 'type', type(block).__name__)} content]")
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False, default=str)
    return "\n".join(parts)


# -- configuration -----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Spec:
    name: str
    transport: Literal["stdio", "http"]
    timeout: float
    command: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)


def _secrets(name: str, what: str, table: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, raw in table.items():
        value = resolve_secret(raw)
        if value is None:
            raise ValueError(f"{what} {key!r} points at an unset variable or an unreadable file")
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ValueError(f"{what} {key!r} must be a string, got {type(value).__name__}")
        out[str(key)] = str(value)
    return out


def _parse_spec(name: str, raw: Mapping[str, Any]) -> _Spec:
    """Read one ``[mcp.servers.NAME]`` table; raises ``ValueError`` with the reason it cannot be used."""
    command, url = raw.get("command"), raw.get("url")
    timeout = float(raw.get("timeout", DEFAULT_TIMEOUT))
    if timeout <= 0:
        raise ValueError("timeout must be a positive number of seconds")
    if command and url:
        raise ValueError("set either command (a stdio server) or url (an HTTP server), not both")
    if url:
        return _Spec(
            name, "http", timeout, url=str(url), headers=_secrets(name, "header", raw.get("headers", {}))
        )
    if command:
        cwd = raw.get("cwd")
        return _Spec(
            name,
            "stdio",
            timeout,
            command=str(command),
            args=[str(a) for a in raw.get("args", [])],
            env=_secrets(name, "environment variable", raw.get("env", {})),
            cwd=str(Path(cwd).expanduser()) if cwd else None,
        )
    raise ValueError("needs command (a stdio server) or url (an HTTP server)")


# -- errors ------------------------------------------------------------------------------------------


def _leaf(err: BaseException) -> BaseException:
    """The first real error inside (possibly nested) exception groups raised by task groups."""
    while isinstance(err, BaseExceptionGroup):
        inner = [e for e in err.exceptions if not isinstance(e, asyncio.CancelledError)]
        err = (inner or list(err.exceptions))[0]
    return err


def _is_connection_closed(err: BaseException) -> bool:
    try:
        from mcp.shared.exceptions import MCPError
        from mcp.types import CONNECTION_CLOSED
    except ImportError:
        return False
    return isinstance(err, MCPError) and err.code == CONNECTION_CLOSED


# -- one server --------------------------------------------------------------------------------------


class _Server:
    """One configured server: its connection task, its state and the tools it registered."""

    def __init__(self, manager: _Manager, name: str) -> None:
        self.manager = manager
        self.name = name
        self.toolset = f"mcp-{name}"
        self.spec: _Spec | None = None
        self.state: State = "connecting"
        self.error: str | None = None
        self.skipped: dict[str, str] = {}
        self.renamed: dict[str, str] = {}  # registered name -> the server's own name, where they differ
        self.server_info: tuple[str | None, str | None] = (None, None)
        self.future: cf.Future[None] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._wake: asyncio.Event | None = None
        self._stopping = False
        self._was_ready = False
        self._lost = False
        self._relist = False
        self._log_path: Path | None = None
        self._log_offset = 0

    # state changes are made on the loop thread; readers in other threads see whole values
    def _set(self, state: State, error: str | None = None) -> None:
        self.state = state
        self.error = error
        self.manager.changed()

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    # -- lifecycle ---------------------------------------------------------------------------------------

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.future = asyncio.run_coroutine_threadsafe(self._run(), loop)

    def request_stop(self) -> None:
        """Ask the task to end (thread-safe): a ready session closes cleanly, anything else is cancelled."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return

        def stop() -> None:
            self._stopping = True
            self._poke()
            if self.state != "ready" and self._task is not None:
                self._task.cancel()

        with contextlib.suppress(RuntimeError):  # the loop stopped meanwhile
            loop.call_soon_threadsafe(stop)

    async def _run(self) -> None:
        self._task = asyncio.current_task()
        self._wake = asyncio.Event()
        budget = 0  # reconnect attempts left; a server that never became ready gets none
        delay = _FIRST_BACKOFF
        try:
            while not self._stopping:
                started = time.monotonic()
                self._was_ready = False
                try:
                    await self._session()
                    error = "the server closed the connection"
                except asyncio.CancelledError:
                    raise
                except Exception as err:  # every failure is recorded, never raised
                    error = self._describe(_leaf(err))
                finally:
                    self._unregister()
                if self._stopping:
                    break
                if self._was_ready and (budget == 0 or time.monotonic() - started > _STABLE_AFTER):
                    budget, delay = _RECONNECT_ATTEMPTS, _FIRST_BACKOFF
                if budget == 0:
                    log.error("MCP server %r: %s", self.name, error)
                    self._set("failed", error)
                    return
                budget -= 1
                log.warning("MCP server %r: %s; reconnecting in %.1f s", self.name, error, delay)
                self._set("connecting", error)
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), delay)
                delay = min(delay * 2, _MAX_BACKOFF)
        finally:
            if self.state != "failed":
                self._set("closed", self.error)

    def _describe(self, err: BaseException) -> str:
        spec = self.spec
        assert spec is not None
        if isinstance(err, TimeoutError):
            limit = spec.timeout if self._was_ready else max(spec.timeout, MIN_START_TIMEOUT)
            text = f"no answer within {limit:g} s"
        elif isinstance(err, OSError) and spec.transport == "stdio" and not self._was_ready:
            text = f"cannot start {spec.command!r}: {err.strerror or err}"
        elif _is_connection_closed(err):
            text = "the server closed the connection"
        elif spec.transport == "http" and not self._was_ready:
            text = (
                f"cannot connect: {type(err).__name__}: {err}"
                if str(err)
                else f"cannot connect: {type(err).__name__}"
            )
        else:
            text = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
        tail = self._stderr_tail()
        return f"{text} (stderr: {tail})" if tail else text

    def _stderr_tail(self, limit: int = 300) -> str:
        if self._log_path is None:
            return ""
        try:
            with open(self._log_path, "rb") as fh:
                fh.seek(self._log_offset)
                data = fh.read()[-4000:]
        except OSError:
            return ""
        lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
        return " | ".join(lines[-3:])[-limit:]

    # -- one session -------------------------------------------------------------------------------------

    def _open_log(self) -> TextIO:
        directory = self.manager.data_dir / "logs"
        directory.mkdir(parents=True, exist_ok=True)
        self._log_path = directory / f"mcp-{safe_tool_name(self.name)}.log"
        with contextlib.suppress(OSError):
            if self._log_path.stat().st_size > _LOG_LIMIT:  # start over rather than grow forever
                self._log_path.unlink()
        fh = open(self._log_path, "a", encoding="utf-8")  # noqa: SIM115 - closed by the exit stack
        fh.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting MCP server {self.name!r}\n")
        fh.flush()
        self._log_offset = fh.tell()
        return fh

    async def _session(self) -> None:
        """Connect, register the tools and serve until stopped or the connection is lost."""
        import anyio
        from mcp import ClientSession

        spec = self.spec
        assert spec is not None and self._wake is not None
        self._lost = False
        self._relist = False
        async with contextlib.AsyncExitStack() as stack:
            if spec.transport == "stdio":
                from mcp.client.stdio import StdioServerParameters, stdio_client

                errlog = stack.enter_context(self._open_log())
                params = StdioServerParameters(
                    command=spec.command, args=spec.args, env=spec.env, cwd=spec.cwd
                )
                streams: Any = await stack.enter_async_context(stdio_client(params, errlog=errlog))
            else:
                from mcp.client.streamable_http import streamable_http_client
                from mcp.shared._httpx_utils import create_mcp_http_client

                http = await stack.enter_async_context(create_mcp_http_client(headers=spec.headers or None))
                streams = await stack.enter_async_context(streamable_http_client(spec.url, http_client=http))
            read, write = streams[0], streams[1]
            # A relay between transport and session: when the transport's stream ends, the server is gone.
            relay_in, relay_out = anyio.create_memory_object_stream[Any](0)
            group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(group.cancel_scope.cancel)
            group.start_soon(self._relay, read, relay_in)
            session = await stack.enter_async_context(
                ClientSession(relay_out, write, message_handler=self._on_message)
            )
            with anyio.fail_after(max(spec.timeout, MIN_START_TIMEOUT)):
                init = await session.initialize()
                info = init.server_info
                self.server_info = (info.name, info.version or None)
                await self._refresh(session)
            self._was_ready = True
            self._set("ready")
            log.info("MCP server %r ready with %d tools", self.name, len(self._tool_names()))
            while True:
                await self._wake.wait()
                self._wake.clear()
                if self._stopping or self._lost:
                    return
                if self._relist:
                    self._relist = False
                    try:
                        with anyio.fail_after(spec.timeout):
                            await self._refresh(session)
                    except Exception as err:
                        if self._lost or _is_connection_closed(_leaf(err)):
                            return
                        log.warning("MCP server %r: re-listing the tools failed: %s", self.name, err)

    async def _relay(self, source: Any, sink: Any) -> None:
        import anyio

        try:
            async with sink:
                async for message in source:
                    await sink.send(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            pass
        finally:
            self._lost = True
            self._poke()

    async def _on_message(self, message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            self._relist = True
            self._poke()
        elif isinstance(message, Exception):
            log.debug("MCP server %r: transport error: %s", self.name, message)

    async def _refresh(self, session: ClientSession) -> None:
        from mcp.types import PaginatedRequestParams

        tools: list[Tool] = []
        cursor: str | None = None
        for _ in range(100):  # a paginator that never ends cannot hang start-up
            page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        self._register(tools, session)

    # -- registry ----------------------------------------------------------------------------------------

    def _tool_names(self) -> list[str]:
        return [e.name for e in self.manager.registry.entries() if e.toolset == self.toolset]

    def _register(self, tools: list[Tool], session: ClientSession) -> None:
        """Make the registry hold exactly these tools for this server, without a gap for callers."""
        registry = self.manager.registry
        spec = self.spec
        assert spec is not None
        kept: dict[str, str] = {}
        skipped: dict[str, str] = {}
        origin = Provenance(f"mcp:{self.name}", self.server_info[0], self.server_info[1], "mcp")
        with provenance(origin):
            for tool in tools:
                local = _unique(safe_tool_name(tool.name), kept)
                description = tool.description or tool.title or f"{tool.name} (MCP server {self.name})"
                schema = {"name": local, "description": description, "parameters": dict(tool.input_schema)}
                existing = registry.get(local)
                read_only = tool.annotations is not None and tool.annotations.read_only_hint is True
                try:
                    registry.register(
                        local,
                        self.toolset,
                        schema,
                        self._handler(tool.name, session),
                        is_async=True,
                        description=description,
                        parallel_safe=read_only,
                        timeout=spec.timeout + 5,  # the handler's own timeout fires first, clearer
                        replace=existing is not None and existing.toolset == self.toolset,
                    )
                except ToolNameConflict as err:
                    skipped[tool.name] = f"name {local!r} is taken by toolset {err.existing.toolset!r}"
                except RegistrationError as err:
                    skipped[tool.name] = str(err)
                else:
                    kept[local] = tool.name
        for entry in registry.entries():
            if entry.toolset == self.toolset and entry.name not in kept:
                registry.deregister(entry.name)
        self.renamed = {local: remote for local, remote in kept.items() if local != remote}
        self.skipped = skipped
        for remote, reason in skipped.items():
            log.warning("MCP server %r: tool %r skipped: %s", self.name, remote, reason)

    def _unregister(self) -> None:
        gone = self.manager.registry.deregister_toolset(self.toolset)
        if gone:
            log.info("MCP server %r: %d tools removed", self.name, len(gone))
            # a tool of this server may have replaced a same-named tool of another one: let those re-register
            for other in self.manager.servers.values():
                if other is not self and other.state == "ready" and not other._stopping:
                    other._relist = True
                    other._poke()

    def _handler(self, remote: str, session: ClientSession) -> Callable[..., Coroutine[Any, Any, str]]:
        async def call_mcp_tool(**arguments: Any) -> str:
            loop = self.loop
            coro = self._call(session, remote, arguments)
            if loop is None or asyncio.get_running_loop() is loop:
                return await coro
            # handlers run on the system's loop (or a nested one); the session lives on the MCP loop
            return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))

        call_mcp_tool.__qualname__ = f"mcp:{self.name}:{remote}"
        return call_mcp_tool

    async def _call(self, session: ClientSession, remote: str, arguments: dict[str, Any]) -> str:
        import anyio
        from mcp.shared.exceptions import MCPError

        spec = self.spec
        assert spec is not None
        try:
            with anyio.fail_after(spec.timeout):
                result = await session.call_tool(remote, arguments)
        except TimeoutError:
            raise ToolError(
                f"The MCP server {self.name!r} did not answer within {spec.timeout:g} s.", kind="timeout"
            ) from None
        except MCPError as err:
            if _is_connection_closed(err):
                raise ToolError(
                    f"The MCP server {self.name!r} closed the connection; the call did not complete.",
                    kind="mcp_unavailable",
                ) from None
            raise ToolError(
                f"The MCP server {self.name!r} refused the call: {err}", kind="mcp_error"
            ) from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise ToolError(
                f"The MCP server {self.name!r} is not connected.", kind="mcp_unavailable"
            ) from None
        text = render_result(result)
        if result.is_error:
            raise ToolError(text or f"The MCP tool {remote!r} reported an error.", kind="mcp_tool_error")
        return text

    def snapshot(self) -> dict[str, Any]:
        tools = self._tool_names()
        return {
            "state": self.state,
            "transport": self.spec.transport if self.spec is not None else None,
            "tool_count": len(tools),
            "tools": tools,
            "error": self.error,
            "skipped": dict(self.skipped),
            "renamed": dict(self.renamed),
            "server": self.server_info[0],
            "version": self.server_info[1],
            "log": str(self._log_path) if self._log_path is not None else None,
        }


# -- all servers of one system -----------------------------------------------------------------------


class _Manager:
    def __init__(self, system: ToolSystem) -> None:
        from .pipeline._bridge import LoopBridge

        # not the system itself: the weak map of managers must not keep its key alive
        self.registry = system.registry
        self.data_dir = system.data_dir
        self.servers: dict[str, _Server] = {}
        self.bridge = LoopBridge("hermes-mcp")
        self._cond = threading.Condition()

    def changed(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def settled(self) -> bool:
        return all(s.state != "connecting" for s in self.servers.values())

    def wait(self, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(self.settled, timeout)

    def close(self) -> None:
        """Stop every server (their processes exit or are killed), then the MCP loop."""
        for server in self.servers.values():
            server.request_stop()
        futures = [s.future for s in self.servers.values() if s.future is not None]
        if futures and not self.bridge.in_loop_thread():
            _, pending = cf.wait(futures, timeout=_CLOSE_WAIT)
            for fut in pending:
                fut.cancel()
            if pending:
                log.warning("MCP servers did not stop within %g s; cancelled", _CLOSE_WAIT)
                cf.wait(pending, timeout=_CLOSE_WAIT)
        self.bridge.close()


_managers: weakref.WeakKeyDictionary[ToolSystem, _Manager] = weakref.WeakKeyDictionary()


def _sdk_problem() -> str | None:
    """Why the MCP SDK cannot be used (not installed, or a 1.x release), without importing it."""
    if importlib.util.find_spec("mcp") is None:
        return "the MCP SDK is not installed: pip install 'hermes-tools[mcp]'"
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("mcp")
    except PackageNotFoundError:
        return None  # an unpackaged checkout: trust it
    if not found.split(".")[0].isdigit() or int(found.split(".")[0]) < 2:
        return f"the MCP client needs mcp>=2 (found {found}): pip install 'hermes-tools[mcp]'"
    return None


def start_servers(system: ToolSystem) -> None:
    """Start connecting every enabled ``[mcp.servers.*]`` server in the background; returns at once."""
    if system in _managers:
        return
    manager = _managers[system] = _Manager(system)
    missing = _sdk_problem()
    starting: list[_Server] = []
    for name, raw in system.config.mcp_servers.items():
        server = manager.servers[name] = _Server(manager, name)
        if raw.get("enabled", True) is False:
            server.state = "disabled"
            continue
        try:
            server.spec = _parse_spec(name, raw)
        except ValueError as err:
            server.state, server.error = "failed", f"configuration: {err}"
            log.error("MCP server %r: %s", name, server.error)
            continue
        if missing:
            server.state, server.error = "failed", missing
            log.warning("MCP server %r is configured but %s", name, missing)
            continue
        starting.append(server)
    if starting:
        loop = manager.bridge.loop
        for server in starting:
            server.start(loop)
    system.on_close(manager.close)


def status(system: ToolSystem) -> dict[str, dict[str, Any]]:
    """Per configured server: ``state`` (connecting, ready, failed, disabled, closed), ``tool_count``,
    ``tools``, ``error`` (the last one, also while reconnecting), ``skipped`` tools with the reason,
    ``renamed`` tools (registered name -> the server's name), ``server``/``version`` and its stderr ``log``."""
    manager = _managers.get(system)
    if manager is None:
        return {}
    return {name: server.snapshot() for name, server in manager.servers.items()}


def wait_ready(system: ToolSystem, timeout: float = 30.0) -> bool:
    """Block until no server is still connecting (each is ready, failed or disabled); False on timeout.

    Call it from a thread other than the system's async loop (a host at start-up, a test).
    """
    manager = _managers.get(system)
    if manager is None:
        return True
    if manager.bridge.in_loop_thread():
        raise RuntimeError("wait_ready() would block the loop the MCP servers run on")
    return manager.wait(timeout)
