"""``hermes mcp serve``: a system's selected tools as an MCP server, over stdio or streamable HTTP.

Every ``tools/call`` runs through the system's whole pipeline (``system.call_outcome``: validation, hooks,
approvals, guards, sandbox, redaction, size limits) on the server's pool of workers (see ``_runner``: a bounded
pool, a per-session concurrency cap, cancellation, ``max_call_seconds``). Each client is a session of its own
(``_sessions``): its state, background processes and "session" approvals are never another client's, and they
end with it. The result is the text the model would see (``isError`` when the call did not succeed) plus the
call's attachments as image, audio or embedded-resource content. Approvals and questions are asked of the
client that made the call (``approval``); a client that cannot be asked gets a denial. A call the client
cancels is cancelled in the pipeline: its sandboxed commands are killed and it is not answered, as the
specification says.

``tools/list`` is ``system.definitions(enabled=toolsets, format="mcp", session_id=<the client's>)`` with each
tool's annotations (past the definitions budget: the core tools, ``tool_search`` and what this client's searches
loaded; a search that loads tools sends ``notifications/tools/list_changed``): the registry's ``annotations``
where the tool declares them, else derived: a parallel-safe tool is read-only
(``readOnlyHint``), any other tool may be destructive (``destructiveHint``), as the MCP defaults assume. When that
list changes (a plugin or an MCP server of the served system adds tools, a check flips), clients that listed the
tools get ``notifications/tools/list_changed`` (handshake-era connections; 2026-07-28 clients re-list).
With ``[mcp.serve] skills`` (the default) the skills are served read-only as prompts (``prompts/get`` gives a
skill's SKILL.md) and as resources (``skill://NAME/SKILL.md`` and the files of the skill).

Over HTTP the server binds to loopback unless told otherwise; on any other address it refuses to start
without a bearer token, which every request must then carry (``Authorization: Bearer <token>``).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import ipaddress
import itertools
import json
import re
import secrets
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import __version__
from .._aio.cancel import CancelToken, cancel_scope
from .._log import get_logger
from ..decisions import CallOutcome
from ._http import BearerGuard
from ._runner import CallRunner, CallTookTooLong
from ._sessions import ClientSessions
from ._spec import ServeSettings
from .approval import ClientCall, Rounds, StateRefused, call_fingerprint

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.types import (
        CallToolRequestParams,
        CallToolResult,
        GetPromptRequestParams,
        GetPromptResult,
        InputRequiredResult,
        ListPromptsResult,
        ListResourcesResult,
        ListResourceTemplatesResult,
        ListToolsResult,
        ReadResourceRequestParams,
        ReadResourceResult,
        Tool,
    )

    from ..registry import ToolEntry
    from ..selection import Names
    from ..system import ToolSystem

__all__ = ["BearerGuard", "McpServer", "annotations_for", "is_loopback", "outcome_to_result"]

log = get_logger("hermes.mcp.server")

INSTRUCTIONS = (
    "Tools of a hermes-tools system. Every call is validated, guarded and may need the user's approval; "
    "results that are too long are cut, and the cut says so."
)
SKILL_URI = re.compile(r"^skill://([^/]+)/(.+)$")
_SKILL_LINE = re.compile(r"^- (\S+?)(?: \[bundled\])?: (.*)$")


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


def _refused(message: str) -> Exception:
    from mcp.shared.exceptions import MCPError
    from mcp.types import INVALID_PARAMS

    return MCPError(code=INVALID_PARAMS, message=message)


class McpServer:
    """The MCP face of one ``ToolSystem``: ``enabled`` selects the toolsets it offers (None: the config's)."""

    watch_interval = 1.0
    """Seconds between two looks at the tool list (for ``notifications/tools/list_changed``)."""

    def __init__(
        self,
        system: ToolSystem,
        enabled: Names = None,
        *,
        name: str = "hermes",
        settings: ServeSettings | None = None,
    ) -> None:
        self.system = system
        self.enabled = list(enabled) if enabled is not None and not isinstance(enabled, str) else enabled
        self.settings = settings if settings is not None else ServeSettings.from_config(system.config)
        self._numbers = itertools.count(1)
        self.rounds = Rounds()
        self.sessions = ClientSessions(system, self.settings.session_idle_seconds, self.settings.max_sessions)
        self.sessions.keeps = self.rounds.has
        self.sessions.on_close.append(self.rounds.forget)
        self.runner = CallRunner(
            self.settings.workers, self.settings.session_concurrency, self.settings.max_call_seconds
        )
        self._stdio_session = f"mcp:stdio:{secrets.token_hex(4)}"
        self._listed: str | None = None  # the tool list handshake-era clients last saw (a fingerprint)
        handlers: dict[str, Any] = {}
        if self.settings.skills and system.tool("skills_list") is not None and system.tool("skill_view"):
            handlers = {
                "on_list_prompts": self._list_prompts,
                "on_get_prompt": self._get_prompt,
                "on_list_resources": self._list_resources,
                "on_list_resource_templates": self._list_resource_templates,
                "on_read_resource": self._read_resource,
            }
        self.server: Server[Any] = _server_class()(
            name,
            version=__version__,
            instructions=INSTRUCTIONS,
            get_tool_input_schema=self._input_schema,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            **handlers,
        )

    # -- whose request -----------------------------------------------------------------------------------

    def _session_of(self, ctx: ServerRequestContext[Any, Any]) -> tuple[str, str, bool]:
        """``(session id, kind, fresh)`` of a request (see ``_sessions``); kind "once" is a request of its own."""
        request = ctx.request
        if request is None:
            return self._stdio_session, "stdio", False
        state = request.scope.get("state") or {}
        found = state.get("hermes.session")
        if found is not None:  # 2026-07-28 over HTTP: the session cookie
            return found[0], "cookie", found[1]
        transport_session = request.headers.get("mcp-session-id")
        if transport_session:
            session_id = f"mcp:http:{transport_session}"
            connection = getattr(ctx.session, "_connection", None)
            if connection is not None and connection.state.get("hermes.session") != session_id:
                connection.state["hermes.session"] = session_id
                connection.exit_stack.push_async_callback(self._close_session, session_id)  # ends with it
            return session_id, "http", False
        return f"mcp:http:once:{secrets.token_hex(8)}", "once", True

    async def _close_session(self, session_id: str) -> None:
        """End a session off the loop (killing its processes may take a moment)."""
        import anyio

        await anyio.to_thread.run_sync(self.sessions.close, session_id)

    # -- tools -------------------------------------------------------------------------------------------

    def tools(self, session_id: str | None = None) -> list[Tool]:
        """The tools this server offers now to ``session_id`` (the selection, minus tools hidden by their checks;
        past the definitions budget, the core tools, ``tool_search`` and what that session's searches loaded)."""
        from mcp.types import Tool, ToolAnnotations

        registry = self.system.registry
        definitions = self.system.definitions(enabled=self.enabled, format="mcp", session_id=session_id)
        out = []
        for definition in definitions:
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

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        """A tool's input schema (for the SDK's check of 2026-07-28 ``Mcp-Param-*`` headers), without a listing."""
        entry = self.system.tool(name)
        return dict(entry.parameters) if entry is not None else None

    async def _off_loop(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn`` on the server's workers (checks and skills must not hold up the connection's loop)."""
        return await self.runner.off_loop(fn, *args)

    async def _list_tools(self, ctx: ServerRequestContext[Any, Any], params: Any) -> ListToolsResult:
        from mcp.types import ListToolsResult
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        session_id, kind, _ = self._session_of(ctx)
        tools = await self._off_loop(self.tools, session_id)
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS and kind in ("stdio", "http"):
            if self._listed is None:  # what the watch compares with from now on
                self._listed = await self._off_loop(self._current_fingerprint)
            self.sessions.listen(session_id, kind, ctx.session)  # told of changes until the session ends
        return ListToolsResult(tools=tools)

    async def watch(self) -> None:
        """Tell handshake-era clients when the tool list changes (runs until cancelled)."""
        while True:
            await asyncio.sleep(self.watch_interval)
            listeners = self.sessions.listeners()
            if not listeners or self._listed is None:
                continue
            now = await self._off_loop(self._current_fingerprint)
            if now == self._listed:
                continue
            self._listed = now
            for session_id, listener in listeners:
                try:
                    await listener.send_tool_list_changed()
                except Exception as err:  # the connection is gone
                    log.debug("tools/list_changed to %s failed: %s", session_id, err)
                    self.sessions.drop_listener(session_id)

    def _current_fingerprint(self) -> str:
        return _fingerprint(self.system.definitions(enabled=self.enabled, format="mcp"))

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        from mcp.types import InputRequiredResult

        session_id, kind, fresh = self._session_of(ctx)
        arguments = params.arguments if params.arguments is not None else {}
        fingerprint = call_fingerprint(params.name, arguments)
        answers: dict[str, Any] = {}
        asked: frozenset[str] = frozenset()
        if params.request_state:
            if fresh:  # a client that keeps no session cookie: the round's own session
                session_id = self.rounds.owner(params.request_state) or session_id
            try:
                answers, asked = self.rounds.redeem(params.request_state, session_id, fingerprint)
            except StateRefused as err:
                raise _refused(f"request_state refused: {err}") from None
        call = ClientCall(
            ctx,
            asyncio.get_running_loop(),
            session_id,
            answers=answers,
            asked=asked,
            input_responses=params.input_responses,
            stateful=kind != "once",
        )
        call_id = f"mcp-{next(self._numbers)}"
        # with tool search on, a search (or a deferred tool's first call) may load tools for this session
        loaded = self.system.loaded_tools(session_id) if self.system.deferral.active else None
        before = loaded.version if loaded is not None else 0
        try:
            with self.sessions.active(session_id, kind):
                work = functools.partial(self._run, call, params.name, arguments, call_id)
                try:
                    outcome = await self.runner.run(session_id, work, what=f"the call to {params.name!r}")
                except CallTookTooLong as err:
                    return _error_result(params.name, "timeout", f"Stopped: {err}.")
                if call.pending:  # 2026-07-28: ask, and the client runs the call again with the answers
                    given = {k: v for k, v in call.answers.items() if v is not None}
                    handle = self.rounds.issue(session_id, fingerprint, given, call.asked())
                    return InputRequiredResult(input_requests=call.pending, request_state=handle)
                if "session" in call.answers.values():
                    self.system.session(session_id)  # the grant lives as long as the session: keep it open
                if loaded is not None and loaded.version != before:
                    await self._tell_list_changed(ctx, session_id)
                return outcome_to_result(outcome, call.notes if outcome.status == "denied" else None)
        finally:
            if kind == "once":
                self.sessions.close(session_id)

    async def _tell_list_changed(self, ctx: ServerRequestContext[Any, Any], session_id: str) -> None:
        """``notifications/tools/list_changed`` to this connection (handshake-era ones; newer clients re-list)."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return
        try:
            await ctx.session.send_tool_list_changed()
        except Exception as err:  # the connection is gone
            log.debug("tools/list_changed to %s failed: %s", session_id, err)

    def _run(
        self, call: ClientCall, name: str, arguments: Any, call_id: str, token: CancelToken
    ) -> CallOutcome:
        with cancel_scope(token):
            return self.system.call_outcome(
                name,
                arguments,
                enabled=self.enabled,
                session_id=call.session_id,
                call_id=call_id,
                approver=call,
                ask_user=call.ask_user,
            )

    # -- skills as prompts and resources -----------------------------------------------------------------

    def _skill_call(self, name: str, arguments: dict[str, Any]) -> CallOutcome:
        entry = self.system.tool(name)
        toolset = entry.toolset if entry is not None else name
        return self.system.call_outcome(name, arguments, enabled=[toolset], session_id="mcp:skills")

    def _skills(self) -> list[tuple[str, str]]:
        outcome = self._skill_call("skills_list", {})
        if outcome.status != "ok":
            log.warning("skills are not served: %s", outcome.result)
            return []
        found = (_SKILL_LINE.match(line) for line in outcome.result.splitlines())
        return [(m.group(1), m.group(2)) for m in found if m is not None]

    def _skill_text(self, name: str, file_path: str | None = None) -> str:
        arguments: dict[str, Any] = {"name": name}
        if file_path and file_path != "SKILL.md":
            arguments["file_path"] = file_path
        outcome = self._skill_call("skill_view", arguments)
        if outcome.status != "ok":
            try:
                message = json.loads(outcome.result).get("error", outcome.result)
            except (ValueError, AttributeError):
                message = outcome.result
            raise _refused(str(message))
        return outcome.result

    async def _list_prompts(self, ctx: ServerRequestContext[Any, Any], params: Any) -> ListPromptsResult:
        from mcp.types import ListPromptsResult, Prompt

        skills = await self._off_loop(self._skills)
        return ListPromptsResult(prompts=[Prompt(name=name, description=about) for name, about in skills])

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: GetPromptRequestParams
    ) -> GetPromptResult:
        from mcp.types import GetPromptResult, PromptMessage, TextContent

        text = await self._off_loop(self._skill_text, params.name)
        return GetPromptResult(
            description=f"The skill {params.name!r}",
            messages=[PromptMessage(role="user", content=TextContent(text=text))],
        )

    async def _list_resources(self, ctx: ServerRequestContext[Any, Any], params: Any) -> ListResourcesResult:
        from mcp.types import ListResourcesResult, Resource

        skills = await self._off_loop(self._skills)
        return ListResourcesResult(
            resources=[
                Resource(
                    uri=f"skill://{name}/SKILL.md", name=name, description=about, mime_type="text/markdown"
                )
                for name, about in skills
            ]
        )

    async def _list_resource_templates(
        self, ctx: ServerRequestContext[Any, Any], params: Any
    ) -> ListResourceTemplatesResult:
        from mcp.types import ListResourceTemplatesResult, ResourceTemplate

        template = ResourceTemplate(
            uri_template="skill://{name}/{path}",
            name="skill file",
            description="SKILL.md or another file of a skill (read-only)",
        )
        return ListResourceTemplatesResult(resource_templates=[template])

    async def _read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: ReadResourceRequestParams
    ) -> ReadResourceResult:
        from mcp.types import ReadResourceResult, TextResourceContents

        uri = str(params.uri)
        found = SKILL_URI.match(uri)
        if found is None:
            raise _refused(f"unknown resource {uri!r}: this server serves skill://NAME/PATH")
        text = await self._off_loop(self._skill_text, found.group(1), found.group(2))
        mime = "text/markdown" if uri.endswith(".md") else "text/plain"
        return ReadResourceResult(contents=[TextResourceContents(uri=uri, text=text, mime_type=mime)])

    # -- transports --------------------------------------------------------------------------------------

    async def serve_stdio(self, stdin: Any = None, stdout: Any = None) -> None:
        """Serve one client on stdin/stdout (or the given async text files) until it disconnects."""
        import anyio
        from mcp.server.stdio import stdio_server

        try:
            async with stdio_server(stdin, stdout) as (read, write), anyio.create_task_group() as group:
                group.start_soon(self.watch)
                await self.server.run(read, write, self.server.create_initialization_options())
                group.cancel_scope.cancel()
        finally:
            self.close()

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
        import anyio
        import uvicorn
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        from ._http import SessionCookies, guarded_protocol

        if not token and not is_loopback(host):
            raise ValueError(f"serving on {host} (not loopback) needs a bearer token")
        settings = self.settings
        app: Any = self.server.streamable_http_app(
            host=host,
            session_idle_timeout=settings.session_idle_seconds,
            max_sessions=settings.max_sessions,
        )
        app = SessionCookies(app, self.sessions, frozenset(MODERN_PROTOCOL_VERSIONS))
        if token:
            app = BearerGuard(app, token)
        family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host.strip("[]"), port))
            sock.listen(256)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        bound = sock.getsockname()[1]
        shown = f"[{host.strip('[]')}]" if family == socket.AF_INET6 else host
        config = uvicorn.Config(
            app,
            log_level="warning",
            lifespan="on",
            access_log=False,
            timeout_keep_alive=max(1, int(settings.idle_connection_seconds)),
            timeout_graceful_shutdown=3,
        )
        config.load()
        config.http_protocol_class = guarded_protocol(
            config.http_protocol_class, settings.max_connections, settings.idle_connection_seconds
        )
        server = uvicorn.Server(config)
        if on_ready is not None:
            on_ready(f"http://{shown}:{bound}/mcp")
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self.watch)
                group.start_soon(self._sweep)
                await server.serve(sockets=[sock])
                group.cancel_scope.cancel()
        finally:
            sock.close()
            self.close()

    async def _sweep(self) -> None:
        """Close the sessions that idled out (runs until cancelled)."""
        every = min(60.0, max(0.5, self.settings.session_idle_seconds / 4))
        while True:
            await asyncio.sleep(every)
            closed = await self._off_loop(self.sessions.sweep)
            if closed:
                log.info("closed %d idle MCP sessions", len(closed))

    def close(self) -> None:
        """End every client session (their processes end) and stop the workers."""
        self.sessions.close_all()
        self.runner.close()


def _fingerprint(definitions: list[dict[str, Any]]) -> str:
    return json.dumps(definitions, sort_keys=True, default=str)


def _error_result(name: str, kind: str, message: str) -> CallToolResult:
    outcome = CallOutcome(name=name, status="error", result=json.dumps({"error": message}), error_kind=kind)
    return outcome_to_result(outcome)
