"""``hermes mcp serve``: a system's selected tools as an MCP server, over stdio or streamable HTTP.

Every ``tools/call`` runs through the system's whole pipeline (``system.call_outcome``: validation, hooks,
approvals, guards, sandbox, redaction, size limits) on a worker thread, so a slow tool never stalls the
connection. The result is the text the model would see (``isError`` when the call did not succeed) plus the
call's attachments as image, audio or embedded-resource content. Approvals are asked of the client by
elicitation (see ``approval``); a client that cannot be asked gets a denial.

``tools/list`` is ``system.definitions(enabled=toolsets, format="mcp", session_id=<the connection's>)`` with each
tool's annotations (past the definitions budget: the core tools, ``tool_search`` and what this connection's
searches loaded; a search that loads tools sends ``notifications/tools/list_changed``): the
registry's ``annotations`` where the tool declares them, else derived: a parallel-safe tool is read-only
(``readOnlyHint``), any other tool may be destructive (``destructiveHint``), as the MCP defaults assume. When that
list changes (a plugin or an MCP server of the served system adds tools, a check flips), clients that listed the
tools get ``notifications/tools/list_changed`` (handshake-era connections; 2026-07-28 clients re-list).

Over HTTP the server binds to loopback unless told otherwise; on any other address it refuses to start
without a bearer token, which every request must then carry (``Authorization: Bearer <token>``).
"""

from __future__ import annotations

import asyncio
import base64
import hmac
import ipaddress
import itertools
import json
import logging
import socket
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..decisions import CallOutcome
from .approval import ClientCall, serving

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolRequestParams, CallToolResult, InputRequiredResult, ListToolsResult, Tool

    from ..registry import ToolEntry
    from ..selection import Names
    from ..system import ToolSystem

__all__ = ["BearerGuard", "McpServer", "annotations_for", "is_loopback", "outcome_to_result"]

log = logging.getLogger("hermes.mcp.server")

INSTRUCTIONS = (
    "Tools of a hermes-tools system. Every call is validated, guarded and may need the user's approval; "
    "results that are too long are cut, and the cut says so."
)


def annotations_for(entry: ToolEntry) -> dict[str, Any]:
    """The MCP annotations of a registered tool: declared ones win over the derived read-only/destructive pair."""
    declared = dict(entry.annotations or {})
    read_only = bool(declared.get("readOnlyHint", entry.parallel_safe))
    return {"readOnlyHint": read_only, "destructiveHint": not read_only, **declared}


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def outcome_to_result(outcome: CallOutcome, notes: list[str] | None = None) -> CallToolResult:
    """A pipeline outcome as an MCP ``CallToolResult`` (text first, then one content block per attachment)."""
    from mcp.types import (
        AudioContent,
        BlobResourceContents,
        CallToolResult,
        ContentBlock,
        EmbeddedResource,
        ImageContent,
        TextContent,
    )

    content: list[ContentBlock] = [TextContent(text=outcome.result)]
    content.extend(TextContent(text=note) for note in notes or ())
    for number, attachment in enumerate(outcome.attachments, 1):
        data = base64.b64encode(attachment.data).decode("ascii")
        if attachment.kind == "image":
            content.append(ImageContent(data=data, mime_type=attachment.mime_type))
        elif attachment.kind == "audio":
            content.append(AudioContent(data=data, mime_type=attachment.mime_type))
        else:
            uri = attachment.name or f"attachment://{outcome.call_id or 'call'}/{number}"
            content.append(
                EmbeddedResource(
                    resource=BlobResourceContents(uri=uri, blob=data, mime_type=attachment.mime_type)
                )
            )
    meta = {"status": outcome.status, "error_kind": outcome.error_kind, "truncated": outcome.truncated}
    return CallToolResult(  # type: ignore[call-arg]  # "meta" is the field, "_meta" its wire alias
        content=content, is_error=outcome.status != "ok", meta={"hermes-tools/outcome": meta}
    )


def _server_class() -> type[Server[Any]]:
    from mcp.server.lowlevel import NotificationOptions, Server
    from mcp.server.models import InitializationOptions

    class _Server(Server[Any]):
        """Announces ``tools.listChanged``: the tool list may change while a client is connected."""

        def create_initialization_options(
            self,
            notification_options: NotificationOptions | None = None,
            experimental_capabilities: dict[str, dict[str, Any]] | None = None,
            extensions: dict[str, dict[str, Any]] | None = None,
        ) -> InitializationOptions:
            options = notification_options or NotificationOptions(tools_changed=True)
            return super().create_initialization_options(options, experimental_capabilities, extensions)

    return _Server


class McpServer:
    """The MCP face of one ``ToolSystem``: ``enabled`` selects the toolsets it offers (None: the config's)."""

    watch_interval = 1.0
    """Seconds between two looks at the tool list (for ``notifications/tools/list_changed``)."""

    def __init__(self, system: ToolSystem, enabled: Names = None, *, name: str = "hermes") -> None:
        self.system = system
        self.enabled = list(enabled) if enabled is not None and not isinstance(enabled, str) else enabled
        self._numbers = itertools.count(1)
        self._listeners: dict[str, Any] = {}  # connection -> a session proxy of its, to notify on changes
        self.server: Server[Any] = _server_class()(
            name,
            version=__version__,
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    # -- handlers ----------------------------------------------------------------------------------------

    def tools(self, session_id: str | None = None) -> list[Tool]:
        """The tools this server offers now to ``session_id`` (the selection, minus tools hidden by their checks;
        past the definitions budget, the core tools, ``tool_search`` and what that session's searches loaded)."""
        from mcp.types import Tool, ToolAnnotations

        registry = self.system.registry
        out = []
        for definition in self.system.definitions(enabled=self.enabled, format="mcp", session_id=session_id):
            entry = registry.get(definition["name"])
            annotations = annotations_for(entry) if entry is not None else {}
            out.append(
                Tool(
                    name=definition["name"],
                    description=definition.get("description") or None,
                    input_schema=definition["inputSchema"],
                    annotations=ToolAnnotations.model_validate(annotations) if annotations else None,
                )
            )
        return out

    async def _list_tools(self, ctx: ServerRequestContext[Any, Any], params: Any) -> ListToolsResult:
        import anyio
        from mcp.types import ListToolsResult
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        session_id = _session_of(ctx)[0]
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:  # a connection that can take notifications
            self._listeners[session_id] = ctx.session
        # definitions() may run tool checks (with their own timeout): keep them off the connection's loop
        return ListToolsResult(tools=await anyio.to_thread.run_sync(self.tools, session_id))

    def _fingerprint(self) -> str:
        return json.dumps(
            self.system.definitions(enabled=self.enabled, format="mcp"), sort_keys=True, default=str
        )

    async def watch(self) -> None:
        """Tell connected clients when the tool list changes (runs until cancelled)."""
        import anyio

        last = await anyio.to_thread.run_sync(self._fingerprint)
        while True:
            await anyio.sleep(self.watch_interval)
            now = await anyio.to_thread.run_sync(self._fingerprint)
            if now == last:
                continue
            last = now
            for key, session in list(self._listeners.items()):
                try:
                    await session.send_tool_list_changed()
                except Exception as err:  # the connection is gone
                    log.debug("tools/list_changed to %s failed: %s", key, err)
                    self._listeners.pop(key, None)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        import anyio
        from mcp.types import InputRequiredResult

        session_id, stateful = _session_of(ctx)
        call = ClientCall(
            ctx,
            asyncio.get_running_loop(),
            session_id,
            input_responses=params.input_responses,
            request_state=params.request_state,
            stateful=stateful,
        )
        arguments = params.arguments if params.arguments is not None else {}
        loaded = self.system.loaded_tools(session_id)
        before = loaded.version
        outcome = await anyio.to_thread.run_sync(self._run, call, params.name, arguments)
        if call.pending:  # 2026-07-28: ask, and the client runs the call again with the answers
            return InputRequiredResult(input_requests=call.pending, request_state=call.state())
        if (
            loaded.version != before
        ):  # a search (or a deferred tool's first call) loaded tools for this session
            await self._tell_list_changed(ctx, session_id)
        return outcome_to_result(outcome, call.notes if outcome.status == "denied" else None)

    async def _tell_list_changed(self, ctx: ServerRequestContext[Any, Any], session_id: str) -> None:
        """``notifications/tools/list_changed`` to this connection (handshake-era ones; newer clients re-list)."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return
        try:
            await ctx.session.send_tool_list_changed()
        except Exception as err:  # the connection is gone
            log.debug("tools/list_changed to %s failed: %s", session_id, err)

    def _run(self, call: ClientCall, name: str, arguments: Any) -> CallOutcome:
        with serving(call):
            return self.system.call_outcome(
                name,
                arguments,
                enabled=self.enabled,
                session_id=call.session_id,
                call_id=f"mcp-{next(self._numbers)}",
            )

    # -- transports --------------------------------------------------------------------------------------

    async def serve_stdio(self) -> None:
        """Serve one client on this process's stdin/stdout until it disconnects."""
        import anyio
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write), anyio.create_task_group() as group:
            group.start_soon(self.watch)
            await self.server.run(read, write, self.server.create_initialization_options())
            group.cancel_scope.cancel()

    async def serve_http(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        token: str | None = None,
        on_ready: Callable[[str], Any] | None = None,
    ) -> None:
        """Serve streamable HTTP at ``http://host:port/mcp`` until cancelled; ``on_ready(url)`` once listening.

        A token is required unless ``host`` is a loopback address; when given, every request must carry it.
        """
        import uvicorn

        if not token and not is_loopback(host):
            raise ValueError(f"serving on {host} (not loopback) needs a bearer token")
        app: Any = self.server.streamable_http_app(host=host)
        if token:
            app = BearerGuard(app, token)
        family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host.strip("[]"), port))
            sock.listen(128)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        bound = sock.getsockname()[1]
        shown = f"[{host.strip('[]')}]" if family == socket.AF_INET6 else host
        config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
        server = uvicorn.Server(config)
        if on_ready is not None:
            on_ready(f"http://{shown}:{bound}/mcp")
        import anyio

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self.watch)
                await server.serve(sockets=[sock])
                group.cancel_scope.cancel()
        finally:
            sock.close()


def _session_of(ctx: ServerRequestContext[Any, Any]) -> tuple[str, bool]:
    """The pipeline session id of a connection, and whether it is one (a stateless request is not)."""
    request = ctx.request
    headers: Mapping[str, str] | None = getattr(request, "headers", None)
    if headers is None:
        return "mcp:stdio", True
    transport_session = headers.get("mcp-session-id")
    if transport_session:
        return f"mcp:http:{transport_session}", True
    return "mcp:http", False


class BearerGuard:
    """ASGI middleware: HTTP requests without ``Authorization: Bearer <token>`` get 401 and go no further."""

    def __init__(self, app: Callable[..., Awaitable[None]], token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            given = b""
            for key, value in scope.get("headers") or ():
                if key.lower() == b"authorization":
                    given = value
                    break
            if not hmac.compare_digest(given, self._expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="hermes"'),
                        ],
                    }
                )
                await send(
                    {
                        "type": "http.response.body",
                        "body": b'{"error": "missing or wrong bearer token"}',
                    }
                )
                return
        await self.app(scope, receive, send)
