"""What an MCP server may ask of hermes as its client: elicitation, sampling and roots.

A server asks while one of hermes's calls to it runs (or, rarely, on its own); the request goes to whoever stands
behind that call: the call's ``ask_user`` and approver when it brought them (a chat UI, an MCP client of
``hermes mcp serve``), else the system's.

- **Elicitation** (a form or a URL): each field of the form becomes a question put through ``ask_user`` (a choice
  list for enums and booleans; the default when the answer is empty), after a first question that lets the user
  decline or cancel. With nobody to ask (a headless host) the request is refused with that reason.
- **Sampling**: served by the host's configured model (``[models]``; ``sampling_model`` per server), after the
  approver agreed (kind ``mcp-sampling``; a "session" answer covers the server's later requests) unless the
  server is trusted (``trust = "all"``). Refused with the reason when no model is configured, when the server's
  ``sampling = false``, or when nobody approves.
- **Roots**: the workspace (``roots = false`` hides it).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._log import get_logger
from ..errors import ToolError

if TYPE_CHECKING:
    from ..context import CallContext
    from ..system import ToolSystem
    from ._spec import ServerSpec

__all__ = ["ServerRequests", "fill_form"]

log = get_logger("hermes.mcp")

AskUser = Callable[[str, Any], str]
_PREVIEW = 300


class Declined(Exception):
    """The user declined (``action`` "decline") or cancelled (``action`` "cancel") the form."""

    def __init__(self, action: str) -> None:
        super().__init__(action)
        self.action = action


def _convert(field: dict[str, Any], answer: str) -> Any:
    kind = field.get("type")
    if kind == "boolean":
        lowered = answer.strip().lower()
        if lowered in ("yes", "true", "y", "1"):
            return True
        if lowered in ("no", "false", "n", "0"):
            return False
        raise ValueError("answer yes or no")
    if kind == "integer":
        return int(answer.strip())
    if kind == "number":
        return float(answer.strip())
    if kind == "array":
        return [part.strip() for part in answer.split(",") if part.strip()]
    return answer


def _choices(field: dict[str, Any]) -> list[str] | None:
    if field.get("type") == "boolean":
        return ["yes", "no"]
    if "enum" in field:
        return [str(v) for v in field["enum"]]
    if "oneOf" in field:
        return [str(o.get("const")) for o in field["oneOf"] if isinstance(o, dict) and "const" in o]
    return None


def fill_form(message: str, schema: dict[str, Any], ask: AskUser) -> dict[str, Any]:
    """Fill an elicitation form by asking one question per field; raises ``Declined`` when the user says so."""
    first = ask(f"An MCP server asks: {message}\n\nAnswer its questions?", ["accept", "decline", "cancel"])
    first = first.strip().lower()
    if first in ("decline", "cancel", "no"):
        raise Declined("cancel" if first == "cancel" else "decline")
    required = set(schema.get("required") or ())
    content: dict[str, Any] = {}
    for name, field in (schema.get("properties") or {}).items():
        if not isinstance(field, dict):
            continue
        title = field.get("title") or name
        question = f"{title}: {field['description']}" if field.get("description") else str(title)
        if "default" in field:
            question += f" (empty for {field['default']!r})"
        choices = _choices(field)
        if choices is None and field.get("type") == "array":
            items = field.get("items") or {}
            options = _choices(items) if isinstance(items, dict) else None
            if options:
                question += f" (several of: {', '.join(options)}, separated by commas)"
        for _ in range(3):
            answer = ask(question, choices)
            if not answer.strip():
                if "default" in field:
                    content[name] = field["default"]
                    break
                if name not in required:
                    break
                question = f"{title} is required. {question}"
                continue
            try:
                content[name] = _convert(field, answer)
                break
            except ValueError as err:
                question = f"{title}: {err}. {question}"
        else:
            raise Declined("cancel")
    return content


class ServerRequests:
    """The callbacks one server's ``ClientSession`` gets, and the calls of ours in flight on that server."""

    def __init__(self, system: ToolSystem, spec: ServerSpec, name: str) -> None:
        self.system = system
        self.spec = spec
        self.name = name
        self._calls: list[CallContext] = []
        self._lock = threading.Lock()

    # -- whose call ---------------------------------------------------------------------------------------

    def started(self, context: CallContext) -> None:
        with self._lock:
            self._calls.append(context)

    def ended(self, context: CallContext) -> None:
        with self._lock:
            if context in self._calls:
                self._calls.remove(context)

    def _current(self) -> CallContext | None:
        """The call the server is most likely asking about: the latest of ours in flight on it."""
        with self._lock:
            return self._calls[-1] if self._calls else None

    def _asker(self) -> AskUser | None:
        context = self._current()
        if context is not None:
            return context.ask_user if context.can_ask_user else None
        return self.system.ask_user

    # -- the callbacks (on the MCP loop) ----------------------------------------------------------------

    def callbacks(self) -> dict[str, Any]:
        out: dict[str, Any] = {"elicitation_callback": self.elicit, "sampling_callback": self.sample}
        if self.spec.roots:
            out["list_roots_callback"] = self.roots
        return out

    async def elicit(self, context: Any, params: Any) -> Any:
        from mcp.types import INVALID_REQUEST, ElicitRequestURLParams, ElicitResult, ErrorData

        ask = self._asker()
        if ask is None:
            return ErrorData(
                code=INVALID_REQUEST,
                message="refused: nobody can answer questions here (a headless host has no ask_user)",
            )
        if isinstance(params, ElicitRequestURLParams):

            def by_url() -> Any:
                answer = ask(
                    f"An MCP server ({self.name}) asks you to open {params.url}\n{params.message}\n"
                    "Answer 'done' when finished.",
                    ["done", "decline", "cancel"],
                )
                lowered = answer.strip().lower()
                return ElicitResult(
                    action="accept" if lowered == "done" else "decline" if lowered == "decline" else "cancel"
                )

            return await self._in_thread(by_url)

        def form() -> Any:
            try:
                content = fill_form(params.message, dict(params.requested_schema), ask)
            except Declined as declined:
                return ElicitResult(action="cancel" if declined.action == "cancel" else "decline")
            except ToolError as err:
                return ErrorData(code=INVALID_REQUEST, message=f"refused: {err.message}")
            return ElicitResult(action="accept", content=content)

        return await self._in_thread(form)

    async def sample(self, context: Any, params: Any) -> Any:
        from mcp.types import INVALID_REQUEST, CreateMessageResult, ErrorData, TextContent

        def run() -> Any:
            refusal = self._sampling_refusal(params)
            if refusal:
                return ErrorData(code=INVALID_REQUEST, message=f"sampling refused: {refusal}")
            from ..models import ModelConfigError, ModelError, get_model

            try:
                model = get_model(self.system.host, self.spec.sampling_model)
            except ModelConfigError as err:
                return ErrorData(
                    code=INVALID_REQUEST, message=f"sampling refused: no model to sample with ({err})"
                )
            try:
                reply = model.complete(_messages(params))
            except ModelError as err:
                return ErrorData(code=INVALID_REQUEST, message=f"sampling failed: {err}")
            return CreateMessageResult(
                role="assistant",
                content=TextContent(text=reply.text or ""),
                model=reply.model or "hermes",
                stop_reason="endTurn",
            )

        return await self._in_thread(run)

    def _sampling_refusal(self, params: Any) -> str:
        """Why a sampling request is not served ("" when it may be)."""
        if not self.spec.sampling:
            return f"[mcp.servers.{self.name}] sampling = false"
        from ..models import model_problem

        problem = model_problem(self.system.config, self.spec.sampling_model)
        if problem:
            return f"no model to sample with ({problem})"
        if self.spec.trust == "all":
            return ""
        preview = json.dumps(_messages(params), ensure_ascii=False)[:_PREVIEW]
        context = self._current()
        if context is None:
            context = own_context(self.system, f"mcp:{self.name}")
        try:
            context.request_approval(
                f"mcp:{self.name} sampling", f"the MCP server asks the model: {preview}", kind="mcp-sampling"
            )
        except ToolError as err:
            return f"not approved ({err.message})"
        return ""

    async def roots(self, context: Any) -> Any:
        from mcp.types import ListRootsResult, Root

        call = self._current()
        workspace = Path(call.workspace) if call is not None else self.system.workspace
        return ListRootsResult(roots=[Root(uri=workspace.resolve().as_uri(), name="workspace")])  # type: ignore[arg-type]

    @staticmethod
    async def _in_thread(fn: Callable[[], Any]) -> Any:
        """Run a blocking question off the MCP loop (it carries the server's other traffic meanwhile)."""
        return await asyncio.get_running_loop().run_in_executor(None, fn)


def _messages(params: Any) -> list[dict[str, Any]]:
    """A sampling request as chat messages for ``hermes_core.models``."""
    out: list[dict[str, Any]] = []
    if getattr(params, "system_prompt", None):
        out.append({"role": "system", "content": params.system_prompt})
    for message in params.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        text = "\n".join(getattr(b, "text", f"[{getattr(b, 'type', 'content')}]") for b in blocks)
        out.append({"role": message.role, "content": text})
    return out


def own_context(system: ToolSystem, tool_name: str) -> CallContext:
    """A context of the system's own session, for asking the system's approver outside any call's context."""
    from ..context import CallContext

    return CallContext(
        session_id=system.session_id,
        workspace=system.workspace,
        tool_name=tool_name,
        host=system.host,
        guard=system.guard,
    )
