"""MCP servers as a source of tools: each server in ``[mcp.servers.NAME]`` becomes the toolset ``mcp-NAME``.

Servers connect in the background on an event loop of their own (one thread per system, started only when a
server is configured), so ``ToolSystem.load()`` never waits for them, and a sync ``system.call`` made from inside
the system's async loop cannot starve the sessions it needs. The client lives in the system's stash under
``"mcp.client"`` and is closed with the system (every server process stops).

A stdio server is started from ``command``/``args``/``env``/``cwd`` (its stderr goes to
``<data dir>/logs/mcp-NAME.log``); an HTTP server is reached at ``url`` with ``headers`` over streamable HTTP.

After the handshake every listed tool is registered with the server's input schema (names: see ``naming``), so
arguments are checked before they leave. A ``tools/list_changed`` notification re-lists them. A server that goes
away keeps its tools listed; a call meanwhile answers "server X is reconnecting; retry shortly" while the client
reconnects forever, waiting ``FIRST_BACKOFF`` doubling up to ``max_backoff`` seconds between attempts (a server
that was not up at the first try is retried the same way). ``restart(name)`` reconnects at once.

A call may stay silent for ``timeout`` seconds; each progress notification restarts that clock, up to
``max_call_time`` in all. A tool the server marks ``destructiveHint`` asks for approval first (``approve``), one
whose ``taskSupport`` is ``required`` is registered but hidden with the reason (hermes does not run MCP tasks).
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import contextlib
import importlib.util
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO, TypeVar

from .._log import get_logger
from ..context import CallContext
from ..decisions import ToolOutput
from ..errors import ToolError
from ..registry import Provenance, RegistrationError, provenance
from . import _resources
from ._host import ServerRequests, own_context
from ._lifecycle import CHAIN_ENV, is_own_command
from ._spec import FIRST_BACKOFF, ClientSettings, ServerSpec, parse_spec
from .naming import ServerTools, plan_names, safe_tool_name
from .results import render_result

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import Tool

    from ..system import ToolSystem

__all__ = ["STASH_KEY", "McpClients", "http_hint", "start_servers"]

log = get_logger("hermes.mcp")
T = TypeVar("T")

STASH_KEY = "mcp.client"

State = Literal["connecting", "ready", "reconnecting", "failed", "disabled", "closed"]
SETTLED: frozenset[str] = frozenset({"ready", "reconnecting", "failed", "disabled", "closed"})
"""States a waiting host stops waiting for ("reconnecting": it failed at least once and retries on its own)."""

_CLOSE_WAIT = 10.0
_LOG_LIMIT = 1_000_000  # bytes of a server's stderr log kept before it starts over
_HTTP_RECENT = 10.0  # seconds an HTTP error status stays attached to the failure that follows it
_HEARTBEAT = 15.0  # seconds between pings of an idle HTTP server (at most its max_backoff)
TASK_REQUIRED = (
    "the MCP server runs this tool only as a task (taskSupport: required), which hermes does not support"
)


def http_hint(status: int, server: str, sent_credentials: bool = False) -> str:
    """What to do about an HTTP error status from server ``server`` (``sent_credentials``: an Authorization
    header went with the request)."""
    table = f"[mcp.servers.{server}]"
    if status == 401:
        if sent_credentials:
            return (
                f"the server refused the credentials sent: check the Authorization header in {table} headers"
            )
        return (
            f'the server wants credentials: set headers = {{ Authorization = "Bearer ..." }} in {table} (the '
            'token can come from { env = "VAR" } or { file = "path" })'
        )
    if status == 403:
        return f"the server refused these credentials: check {table} headers"
    if status == 404:
        return f"nothing answers at this URL, or the server forgot the session: check {table} url"
    if status in (405, 406, 415):
        return (
            "this URL does not take MCP requests: point url at the streamable HTTP endpoint (often /mcp), or "
            f'at an old HTTP+SSE server\'s /sse with transport = "sse" in {table}'
        )
    if status in (408, 429):
        return "the server is busy or rate-limits this client; retry later"
    if status >= 500:
        return "the server failed; retry later or look at its logs"
    return f"check [mcp.servers.{server}] url and headers"


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


def _short(err: object, limit: int = 200) -> str:
    text = f"{type(err).__name__}: {err}" if isinstance(err, BaseException) else str(err)
    return text if len(text) <= limit else text[:limit] + "…"


class _JunkReported(logging.Filter):
    """Drops the SDK's traceback for each line of a stdio server's stdout that is not MCP: ``_Server`` reports
    such lines itself, once per connection."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != "Failed to parse JSONRPC message from server"


def _quiet_junk() -> None:
    sdk = logging.getLogger("mcp.client.stdio")
    if not any(isinstance(f, _JunkReported) for f in sdk.filters):
        sdk.addFilter(_JunkReported())


def _fingerprint(tool: Tool) -> str:
    return json.dumps(tool.model_dump(mode="json", by_alias=True, exclude_none=True), sort_keys=True)


# -- one server --------------------------------------------------------------------------------------


class _Server:
    """One configured server: its connection task, its state, its last tool listing and what it registered."""

    def __init__(self, clients: McpClients, name: str) -> None:
        self.clients = clients
        self.name = name
        self.toolset = f"mcp-{name}"
        self.spec: ServerSpec | None = None
        self.state: State = "connecting"
        self.error: str | None = None
        self.tools: list[Tool] = []  # the last listing, kept while the server is away
        self.registered: dict[
            str, tuple[str, str]
        ] = {}  # registered name -> (the server's name, fingerprint)
        self.skipped: dict[str, str] = {}
        self.clashes: list[dict[str, Any]] = []
        self.hidden: dict[str, str] = {}
        self.server_info: tuple[str | None, str | None] = (None, None)
        self.session: ClientSession | None = None
        self.attempts = 0  # connection attempts that ended in a failure or a lost connection
        self.future: cf.Future[None] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._scope: Any = None  # the anyio cancel scope of the current connection attempt
        self._wake: asyncio.Event | None = None
        self._stopping = False
        self._restart = False
        self._was_ready = False
        self._lost = False
        self._relist = False
        self._log_path: Path | None = None
        self._log_offset = 0
        self._http_error: tuple[int, str, float] | None = None
        self._http_session = False
        self._junk = 0  # lines of a stdio server's stdout that were not MCP
        self.requests: ServerRequests | None = None
        self.capabilities: Any = None  # the server's, from its handshake
        self.listings: dict[
            str, list[Any]
        ] = {}  # "resources" / "prompts" / "templates", cached until changed
        self.utilities: dict[str, str] = {}  # registered name -> resource/prompt operation (see _resources)

    @property
    def _sent_auth(self) -> bool:
        return self.spec is not None and any(k.lower() == "authorization" for k in self.spec.headers)

    def _set(self, state: State, error: str | None = None) -> None:
        # state changes are made on the loop thread; readers in other threads see whole values
        self.state = state
        self.error = error
        self.clients.changed()

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    # -- lifecycle ---------------------------------------------------------------------------------------

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.future = asyncio.run_coroutine_threadsafe(self._run(), loop)

    def _call_soon(self, fn: Callable[[], None]) -> bool:
        loop = self.loop
        if loop is None or loop.is_closed():
            return False
        try:
            loop.call_soon_threadsafe(fn)
        except RuntimeError:  # the loop stopped meanwhile
            return False
        return True

    def request_stop(self) -> None:
        """Ask the task to end (thread-safe): a ready session closes cleanly, anything else is cancelled."""

        def stop() -> None:
            self._stopping = True
            self._poke()
            if self.state != "ready" and self._task is not None:
                self._task.cancel()

        self._call_soon(stop)

    def request_restart(self) -> bool:
        """Drop the connection (ending the process of a stdio server) and connect again now (thread-safe)."""
        if self.future is None or self.future.done() or self._stopping:
            return False
        self.state = "connecting"  # at once, so that a wait right after this call waits for the new session

        def restart() -> None:
            self._restart = True
            if self._scope is not None:
                self._scope.cancel()
            self._poke()

        return self._call_soon(restart)

    async def _run(self) -> None:
        import anyio

        spec = self.spec
        assert spec is not None
        self._task = asyncio.current_task()
        self._wake = asyncio.Event()
        delay = FIRST_BACKOFF
        try:
            while not self._stopping:
                self._restart = False
                self._was_ready = False
                error = "the server closed the connection"
                try:
                    with anyio.CancelScope() as scope:
                        self._scope = scope
                        await self._session()
                except asyncio.CancelledError:
                    raise
                except Exception as err:  # every failure is recorded, never raised
                    error = self._describe(_leaf(err))
                finally:
                    self._scope = None
                    self.session = None
                if self._stopping:
                    break
                if self._restart:
                    log.info("MCP server %r: restarting", self.name)
                    delay = FIRST_BACKOFF
                    self._set("connecting", None)
                    continue
                self.attempts += 1
                if self._was_ready:
                    delay = FIRST_BACKOFF
                log.warning("MCP server %r: %s; reconnecting in %.1f s", self.name, error, delay)
                self._set("reconnecting", error)
                self._wake.clear()
                if not (self._restart or self._stopping):
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wake.wait(), delay)
                delay = FIRST_BACKOFF if self._restart else min(delay * 2, spec.max_backoff)
        finally:
            self.clients.drop(self)
            self._set("closed", self.error)

    def _http_status(self) -> tuple[int, str] | None:
        recent = self._http_error
        if recent is None or time.monotonic() - recent[2] > _HTTP_RECENT:
            return None
        return recent[0], recent[1]

    def _describe(self, err: BaseException) -> str:
        spec = self.spec
        assert spec is not None
        status = self._http_status() if spec.transport == "http" else None
        if status is not None:
            text = (
                f"HTTP {status[0]} {status[1]}".rstrip()
                + f": {http_hint(status[0], self.name, self._sent_auth)}"
            )
        elif isinstance(err, TimeoutError):
            limit = spec.timeout if self._was_ready else spec.start_timeout
            text = f"no answer within {limit:g} s"
        elif isinstance(err, OSError) and spec.transport == "stdio" and not self._was_ready:
            text = f"cannot start {spec.command!r}: {err.strerror or err}"
        elif _is_connection_closed(err):
            text = "the server closed the connection"
        elif spec.transport == "http" and not self._was_ready:
            text = f"cannot connect: {type(err).__name__}" + (f": {err}" if str(err) else "")
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
        directory = self.clients.data_dir / "logs"
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

    async def _on_http_response(self, response: Any) -> None:
        if response.status_code >= 400:
            self._http_error = (response.status_code, str(response.reason_phrase or ""), time.monotonic())

    def _http_client(
        self, headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None
    ) -> Any:
        """An HTTP client for this server that records error statuses (for the hints)."""
        import httpx2
        from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

        return httpx2.AsyncClient(
            headers=headers,
            timeout=timeout or httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
            auth=auth,
            event_hooks={"response": [self._on_http_response]},
        )

    async def _session(self) -> None:
        """Connect, register the tools and serve until stopped, restarted or the connection is lost."""
        import anyio
        from mcp import ClientSession

        spec = self.spec
        assert spec is not None and self._wake is not None
        self._lost = False
        self._relist = False
        self._http_error = None
        async with contextlib.AsyncExitStack() as stack:
            if spec.transport == "stdio":
                from mcp.client.stdio import StdioServerParameters, stdio_client

                errlog = stack.enter_context(self._open_log())
                env = dict(spec.env)
                if os.environ.get(CHAIN_ENV):  # a hermes among them must know who serves already
                    env.setdefault(CHAIN_ENV, os.environ[CHAIN_ENV])
                params = StdioServerParameters(command=spec.command, args=spec.args, env=env, cwd=spec.cwd)
                streams: Any = await stack.enter_async_context(stdio_client(params, errlog=errlog))
            elif spec.transport == "sse":
                from mcp.client.sse import sse_client

                streams = await stack.enter_async_context(
                    sse_client(
                        spec.url,
                        headers=spec.headers or None,
                        timeout=spec.start_timeout,
                        httpx_client_factory=self._http_client,
                    )
                )
            else:
                from mcp.client.streamable_http import streamable_http_client

                http = await stack.enter_async_context(self._http_client(spec.headers or None))
                streams = await stack.enter_async_context(streamable_http_client(spec.url, http_client=http))
            read, write = streams[0], streams[1]
            # A relay between transport and session: when the transport's stream ends, the server is gone.
            relay_in, relay_out = anyio.create_memory_object_stream[Any](0)
            group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(group.cancel_scope.cancel)
            group.start_soon(self._relay, read, relay_in)
            self.requests = ServerRequests(self.clients.system, spec, self.name)
            session = await stack.enter_async_context(
                ClientSession(relay_out, write, message_handler=self._on_message, **self.requests.callbacks())
            )
            with anyio.fail_after(spec.start_timeout):
                init = await session.initialize()
                info = init.server_info
                self.server_info = (info.name, info.version or None)
                self.capabilities = init.capabilities
                self.listings = {}
                tools = await self._list(session)
            self.session = session
            self._was_ready = True
            self.clients.tools_listed(self, tools)
            self._set("ready")
            log.info("MCP server %r ready with %d tools", self.name, len(self.registered))
            # over HTTP nothing tells us the server went away until a request fails: ping it now and then
            heartbeat = min(_HEARTBEAT, spec.max_backoff) if spec.transport == "http" else None
            while True:
                try:
                    await asyncio.wait_for(self._wake.wait(), heartbeat)
                except TimeoutError:
                    try:
                        with anyio.fail_after(spec.timeout):
                            await session.send_ping()
                    except Exception as err:
                        log.info("MCP server %r: no answer to a ping (%s)", self.name, _leaf(err))
                        raise
                    continue
                self._wake.clear()
                if self._stopping or self._lost or self._restart:
                    return
                if self._relist:
                    self._relist = False
                    try:
                        with anyio.fail_after(spec.timeout):
                            tools = await self._list(session)
                    except Exception as err:
                        if self._lost or _is_connection_closed(_leaf(err)):
                            return
                        log.warning("MCP server %r: re-listing the tools failed: %s", self.name, err)
                    else:
                        self.clients.tools_listed(self, tools)

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
        method = getattr(message, "method", None)
        if method == "notifications/tools/list_changed":
            self._relist = True
            self._poke()
        elif method == "notifications/resources/list_changed":
            self.listings.pop("resources", None)
            self.listings.pop("templates", None)
        elif method == "notifications/prompts/list_changed":
            self.listings.pop("prompts", None)
        elif isinstance(message, Exception):
            self._junk += 1
            if self._junk == 1:  # once per connection: a chatty server must not flood the log
                log.warning(
                    "MCP server %r sent something that is not MCP (%s); further ones are not reported. A stdio "
                    "server must write only protocol messages on its stdout (logs belong on stderr)",
                    self.name,
                    _short(message),
                )
            else:
                log.debug("MCP server %r: not MCP: %s", self.name, _short(message))

    async def _list(self, session: ClientSession) -> list[Tool]:
        from mcp.types import PaginatedRequestParams

        tools: list[Tool] = []
        cursor: str | None = None
        for _ in range(100):  # a paginator that never ends cannot hang start-up
            page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    # -- registry ----------------------------------------------------------------------------------------

    def sync(self, names: dict[str, str]) -> None:
        """Register exactly ``names`` (registered name -> the server's tool name); others were dropped already."""
        registry = self.clients.registry
        spec = self.spec
        assert spec is not None
        by_name = {t.name: t for t in self.tools}
        origin = Provenance(f"mcp:{self.name}", self.server_info[0], self.server_info[1], "mcp")
        self.hidden = {}
        with provenance(origin):
            for local, remote in names.items():
                tool = by_name[remote]
                fingerprint = _fingerprint(tool)
                existing = registry.get(local)
                task_required = tool.execution is not None and tool.execution.task_support == "required"
                if task_required:
                    self.hidden[local] = TASK_REQUIRED
                mine = existing is not None and existing.toolset == self.toolset
                if mine and self.registered.get(local) == (remote, fingerprint):
                    continue
                try:
                    self._register(local, tool, replace=mine, task_required=task_required)
                except RegistrationError as err:
                    self.skipped[remote] = str(err)
                    self.registered.pop(local, None)
                    log.warning("MCP server %r: tool %r skipped: %s", self.name, remote, err)
                else:
                    self.registered[local] = (remote, fingerprint)

    def _register(self, local: str, tool: Tool, *, replace: bool, task_required: bool) -> None:
        spec = self.spec
        assert spec is not None
        annotations = (
            tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True)
            if tool.annotations
            else {}
        )
        # the specification's defaults: not read-only, and then destructive, unless the server says otherwise
        read_only = annotations.get("readOnlyHint") is True
        destructive = not read_only and annotations.get("destructiveHint", True) is not False
        ask = spec.trust == "none" or (spec.trust == "annotations" and destructive)
        description = tool.description or tool.title or f"{tool.name} (MCP server {self.name})"
        params = dict(tool.input_schema)
        schema = {"name": local, "description": description, "parameters": params}
        reason = self._ask_reason(tool.name, annotations) if ask else ""
        self.clients.registry.register(
            local,
            self.toolset,
            schema,
            self._handler(local, tool.name, reason, "context" not in (params.get("properties") or {})),
            check_fn=_hidden_check if task_required else None,
            is_async=True,
            description=description,
            parallel_safe=read_only,
            timeout=spec.max_call_time,
            replace=replace,
            annotations=annotations or None,
        )

    def _ask_reason(self, remote: str, annotations: dict[str, Any]) -> str:
        table = f"[mcp.servers.{self.name}]"
        if self.spec is not None and self.spec.trust == "none":
            return f"{table} trust = 'none': every call asks"
        if annotations.get("destructiveHint") is True:
            return f"the MCP server {self.name!r} marks {remote!r} as destructive"
        return (
            f"the MCP server {self.name!r} does not mark {remote!r} read-only, so by MCP's defaults it may "
            f"destroy data (trust = 'all' in {table} trusts this server)"
        )

    def _handler(
        self, local: str, remote: str, reason: str, context_free: bool
    ) -> Callable[..., Coroutine[Any, Any, str | ToolOutput]]:
        server = self

        async def with_context(context: CallContext, **arguments: Any) -> str | ToolOutput:
            if reason:
                server.approve(remote, arguments, context, reason)
            return await server.dispatch(remote, arguments, context)

        async def own(**arguments: Any) -> str | ToolOutput:
            # the tool has an argument named "context": ask with a context of our own
            context = own_context(server.clients.system, local)
            if reason:
                server.approve(remote, arguments, context, reason)
            return await server.dispatch(remote, arguments, None)

        call_mcp_tool = with_context if context_free else own
        call_mcp_tool.__qualname__ = f"mcp:{self.name}:{remote}"
        return call_mcp_tool

    def approve(self, remote: str, arguments: dict[str, Any], context: CallContext, reason: str) -> None:
        """Ask for approval of a call (raises ``ApprovalDenied``); binds to the exact tool and arguments."""
        subject = f"mcp:{self.name} {remote} {json.dumps(arguments, sort_keys=True, ensure_ascii=False)}"
        context.request_approval(subject, reason, kind="mcp")

    # -- resources and prompts as tools (see _resources) -----------------------------------------------------

    def sync_utilities(self) -> None:
        """Register the resource and prompt tools this server's capabilities call for (and only those)."""
        registry = self.clients.registry
        caps = self.capabilities
        wanted: dict[str, str] = {}
        for capability, ops in _resources.OPERATIONS.items():
            if caps is not None and getattr(caps, capability, None) is not None:
                for op in ops:
                    wanted[safe_tool_name(f"{self.name}_{op}")] = op
        for local in [n for n in self.utilities if n not in wanted]:
            registry.deregister(local)
            del self.utilities[local]
        origin = Provenance(f"mcp:{self.name}", self.server_info[0], self.server_info[1], "mcp")
        with provenance(origin):
            for local, op in wanted.items():
                if local in self.utilities:
                    continue
                existing = registry.get(local)
                if existing is not None:
                    self.skipped[op] = f"its name {local!r} is taken by toolset {existing.toolset!r}"
                    continue
                schema = {"name": local, **_resources.schema_of(self.name, op)}
                try:
                    registry.register(
                        local,
                        self.toolset,
                        schema,
                        self._utility_handler(local, op),
                        is_async=True,
                        description=schema["description"],
                        parallel_safe=True,
                        timeout=self.spec.max_call_time if self.spec is not None else None,
                        annotations={"readOnlyHint": True, "destructiveHint": False},
                    )
                except RegistrationError as err:
                    self.skipped[op] = str(err)
                else:
                    self.utilities[local] = op

    def _utility_handler(self, local: str, op: str) -> Callable[..., Coroutine[Any, Any, str | ToolOutput]]:
        server = self

        async def mcp_utility(context: CallContext, **arguments: Any) -> str | ToolOutput:
            if server.spec is not None and server.spec.trust == "none":
                reason = f"[mcp.servers.{server.name}] trust = 'none': every call asks"
                server.approve(op, arguments, context, reason)
            return await server.on_loop(server.operate(op, arguments), context)

        mcp_utility.__qualname__ = f"mcp:{self.name}:{op}"
        return mcp_utility

    async def operate(self, op: str, arguments: dict[str, Any]) -> Any:
        """A resource or prompt operation on the live session (on the MCP loop)."""
        import anyio

        session = self.session
        if session is None or self.state != "ready" or self.spec is None:
            raise self._unavailable()
        with anyio.fail_after(self.spec.timeout):
            return await _resources.run(session, self.listings, op, arguments)

    async def listing(self, what: str) -> list[Any]:
        """``resources``, ``templates`` or ``prompts`` of the live session (on the MCP loop)."""
        session = self.session
        if session is None or self.state != "ready":
            raise self._unavailable()
        return await _resources.fetch(session, self.listings, what)

    # -- calls -------------------------------------------------------------------------------------------

    async def dispatch(
        self, remote: str, arguments: dict[str, Any], context: CallContext | None
    ) -> str | ToolOutput:
        return await self.on_loop(self._call(remote, arguments), context)

    async def on_loop(self, coro: Coroutine[Any, Any, T], context: CallContext | None = None) -> T:
        """Await ``coro`` on the MCP loop (where the session lives); ``context`` is the call the server may ask
        about meanwhile (elicitation, sampling, roots)."""
        requests = self.requests
        if context is not None and requests is not None:
            requests.started(context)
        try:
            loop = self.loop
            if loop is None or asyncio.get_running_loop() is loop:
                return await coro
            # handlers run on the system's loop (or a nested one); the session lives on the MCP loop
            return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))
        finally:
            if context is not None and requests is not None:
                requests.ended(context)

    def _unavailable(self) -> ToolError:
        return ToolError(f"MCP server {self.name!r} is reconnecting; retry shortly.", kind="mcp_unavailable")

    async def _call(self, remote: str, arguments: dict[str, Any]) -> str | ToolOutput:
        import anyio
        from mcp.shared.exceptions import MCPError

        spec = self.spec
        session = self.session
        assert spec is not None
        if session is None or self.state != "ready":
            raise self._unavailable()
        timeout = spec.timeout

        async def progressed(progress: float, total: float | None, message: str | None) -> None:
            scope.deadline = anyio.current_time() + timeout  # the server is working: give it more time

        with anyio.CancelScope(deadline=anyio.current_time() + timeout) as scope:
            try:
                result = await session.call_tool(remote, arguments, progress_callback=progressed)
            except MCPError as err:
                raise self._call_error(err) from None
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                raise self._unavailable() from None
        if scope.cancelled_caught:
            raise ToolError(
                f"The MCP server {self.name!r} did not answer within {timeout:g} s.", kind="timeout"
            )
        out = render_result(result)
        if result.is_error:
            text = out.text if isinstance(out, ToolOutput) else out
            raise ToolError(text or f"The MCP tool {remote!r} reported an error.", kind="mcp_tool_error")
        return out

    def _call_error(self, err: Exception) -> ToolError:
        if _is_connection_closed(err):
            return ToolError(
                f"The MCP server {self.name!r} closed the connection; the call did not complete. "
                "It is reconnecting; retry shortly.",
                kind="mcp_unavailable",
            )
        status = self._http_status() if self.spec is not None and self.spec.transport == "http" else None
        if status is not None:
            if status[0] == 404:  # the server forgot our session (it restarted): connect again
                self._lost = True
                self._poke()
            hint = http_hint(status[0], self.name, self._sent_auth)
            return ToolError(
                f"The MCP server {self.name!r} answered HTTP {status[0]} {status[1]}".rstrip()
                + f" ({hint}).",
                kind="mcp_http_error",
            )
        return ToolError(f"The MCP server {self.name!r} refused the call: {err}", kind="mcp_error")

    def snapshot(self) -> dict[str, Any]:
        tools = sorted(self.registered)
        return {
            "state": self.state,
            "transport": self.spec.transport if self.spec is not None else None,
            "tool_count": len(tools),
            "tools": tools,
            "error": self.error,
            "attempts": self.attempts,
            "skipped": dict(self.skipped),
            "renamed": {local: remote for local, (remote, _) in self.registered.items() if local != remote},
            "clashes": [dict(c) for c in self.clashes],
            "hidden": dict(self.hidden),
            "prefix": self.spec.prefix if self.spec is not None else None,
            "server": self.server_info[0],
            "version": self.server_info[1],
            "log": str(self._log_path) if self._log_path is not None else None,
        }


def _hidden_check() -> tuple[bool, str]:
    return False, TASK_REQUIRED


# -- all servers of one system -----------------------------------------------------------------------


class McpClients:
    """Every configured server of one system, their shared event loop and the names their tools get."""

    def __init__(self, system: ToolSystem) -> None:
        from .._aio.bridge import LoopBridge

        self.system = system
        self.registry = system.registry
        self.data_dir = system.data_dir
        self.settings = ClientSettings.from_config(system.config)
        self.servers: dict[str, _Server] = {}
        self.bridge = LoopBridge("hermes-mcp")
        self._cond = threading.Condition()
        self._started = False

    def start(self) -> None:
        """Start connecting every enabled server in the background; returns at once (once per system)."""
        if self._started:
            return
        self._started = True
        missing = _sdk_problem()
        starting: list[_Server] = []
        for name, raw in self.system.config.mcp_servers.items():
            server = self.servers[name] = _Server(self, name)
            if raw.get("enabled", True) is False:
                server.state = "disabled"
                continue
            try:
                server.spec = parse_spec(name, raw, self.settings)
            except ValueError as err:
                server.state, server.error = "failed", f"configuration: {err}"
                log.error("MCP server %r: %s", name, server.error)
                continue
            if server.spec.transport == "stdio" and is_own_command(server.spec.command, server.spec.args):
                server.state, server.error = (
                    "failed",
                    (
                        "refused: this is the command line of this very `hermes mcp serve`; it would start itself "
                        f"again and again (remove [mcp.servers.{name}])"
                    ),
                )
                log.error("MCP server %r: %s", name, server.error)
                continue
            if missing:
                server.state, server.error = "failed", missing
                log.warning("MCP server %r is configured but %s", name, missing)
                continue
            starting.append(server)
        if starting:
            _quiet_junk()
            loop = self.bridge.loop
            for server in starting:
                server.start(loop)

    def changed(self) -> None:
        with self._cond:
            self._cond.notify_all()

    # -- names -------------------------------------------------------------------------------------------

    def tools_listed(self, server: _Server, tools: list[Tool]) -> None:
        """A server listed its tools: name every server's tools again and bring the registry in line."""
        server.tools = list(tools)
        self._sync()

    def drop(self, server: _Server) -> None:
        """A server stopped for good: its tools leave, and names qualified because of it may be bare again."""
        server.tools = []
        server.capabilities = None
        self._sync()

    def _sync(self) -> None:
        # runs on the MCP loop thread only, so two servers never plan at the same time
        ours = {s.toolset for s in self.servers.values()}
        taken = {e.name: e.toolset for e in self.registry.entries() if not e.toolset.startswith("mcp-")}
        listed = [
            ServerTools(s.name, s.spec.prefix, [t.name for t in s.tools])
            for s in self.servers.values()
            if s.spec is not None and s.tools
        ]
        plan = plan_names(listed, taken)
        for entry in self.registry.entries():  # first drop what moved or left, so that no name is in the way
            if entry.toolset in ours:
                server = self.servers[entry.toolset[4:]]
                if entry.name in server.utilities:
                    continue
                wanted = plan.names.get(server.name, {})
                if wanted.get(entry.name) != server.registered.get(entry.name, ("",))[0]:
                    self.registry.deregister(entry.name)
                    server.registered.pop(entry.name, None)
        for server in self.servers.values():
            if server.spec is None:  # disabled or misconfigured: never registers anything
                continue
            server.skipped = dict(plan.skipped.get(server.name, {}))
            server.clashes = plan.clashes.get(server.name, [])
            server.sync(plan.names.get(server.name, {}))
            for remote, reason in server.skipped.items():
                log.warning("MCP server %r: tool %r left out: %s", server.name, remote, reason)
            server.sync_utilities()

    # -- resources and prompts, for the host ---------------------------------------------------------------

    def _live(self, name: str) -> _Server:
        server = self.servers.get(name)
        if server is None:
            known = ", ".join(sorted(self.servers)) or "none configured"
            raise KeyError(f"no MCP server named {name!r} (known: {known})")
        return server

    def _run(self, server: _Server, coro: Coroutine[Any, Any, T]) -> T:
        timeout = server.spec.timeout if server.spec is not None else None
        return self.bridge.run(coro, timeout)

    def resources(self, name: str) -> list[dict[str, Any]]:
        """Server ``name``'s resources (dicts with ``uri``, ``name``, ``mimeType``, ``description``)."""
        server = self._live(name)
        return _resources.plain(self._run(server, server.listing("resources")))

    def resource_templates(self, name: str) -> list[dict[str, Any]]:
        """Server ``name``'s resource templates (dicts with ``uriTemplate``, ``name``...)."""
        server = self._live(name)
        return _resources.plain(self._run(server, server.listing("templates")))

    def read_resource(self, name: str, uri: str) -> str | ToolOutput:
        """The contents of resource ``uri`` of server ``name`` (text, plus attachments for binary parts)."""
        server = self._live(name)
        result: str | ToolOutput = self._run(server, server.operate("read_resource", {"uri": uri}))
        return result

    def prompts(self, name: str) -> list[dict[str, Any]]:
        """Server ``name``'s prompts (dicts with ``name``, ``description``, ``arguments``)."""
        server = self._live(name)
        return _resources.plain(self._run(server, server.listing("prompts")))

    def get_prompt(self, name: str, prompt: str, arguments: dict[str, str] | None = None) -> str | ToolOutput:
        """Prompt ``prompt`` of server ``name`` filled with ``arguments``, as text (``[role]`` before each part)."""
        server = self._live(name)
        result: str | ToolOutput = self._run(
            server, server.operate("get_prompt", {"name": prompt, "arguments": arguments or {}})
        )
        return result

    # -- the host's view ---------------------------------------------------------------------------------

    def status(self) -> dict[str, dict[str, Any]]:
        return {name: server.snapshot() for name, server in self.servers.items()}

    def settled(self) -> bool:
        return all(s.state in SETTLED for s in self.servers.values())

    def wait(self, timeout: float) -> bool:
        """Block until no server is connecting for the first time (or after a restart); False on timeout."""
        if self.bridge.in_loop_thread():
            raise RuntimeError("waiting for MCP servers would block the loop they run on")
        with self._cond:
            return self._cond.wait_for(self.settled, timeout)

    def restart(self, name: str) -> bool:
        """Reconnect one server now; False when it is not running (disabled, misconfigured, closed)."""
        server = self.servers.get(name)
        if server is None:
            known = ", ".join(sorted(self.servers)) or "none configured"
            raise KeyError(f"no MCP server named {name!r} (known: {known})")
        started = server.request_restart()
        self.changed()
        return started

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
        for server in self.servers.values():
            if server.state not in ("failed", "disabled"):
                server.state = "closed"
        self.changed()


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


def start_servers(system: ToolSystem) -> McpClients:
    """The system's MCP client (kept in its stash, closed with it), connecting every enabled server."""
    clients = system.stash(STASH_KEY, lambda: McpClients(system))
    clients.start()
    return clients
