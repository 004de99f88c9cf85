"""``Agent``: the loop that lets a model drive the tools of one ``ToolSystem``.

Each turn: the definitions the model may see now, the conversation fitted to the context budget, one model
request (streamed to ``on_event``), then the tool calls it asked for through ``system.call_many_outcomes``
(the full pipeline: validation, policy hooks, the system's approver, limits), their results back into the
conversation; until the model answers without tools, the turn budget ends, or the run is cancelled.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import logging
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..decisions import CallOutcome
from ..models import CancelToken, ModelClient, ModelError, ToolCall, Usage, get_model
from ..selection import SEARCH_TOOL
from ._budget import budget_chars, conversation_chars, fit_messages
from ._events import (
    AgentEvent,
    AgentFinished,
    ContextTrimmed,
    ModelRetrying,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnStarted,
)
from ._result import AgentResult, StopReason

if TYPE_CHECKING:
    from ..context import CallContext
    from ..host import Host

__all__ = ["DEFAULT_MAX_TURNS", "DEFAULT_SYSTEM_PROMPT", "Agent", "new_session_id"]

log = logging.getLogger("hermes.agent")

DEFAULT_MAX_TURNS = 30
DEFAULT_SYSTEM_PROMPT = (
    "You are a capable assistant with tools, working in the folder {workspace}. Use the tools when they help "
    "and check their results instead of guessing. A tool result that is an error tells you what was wrong: "
    "fix the call or choose another way. When the task is done, answer plainly and briefly."
)
_INTERRUPTED = json.dumps({"error": "This call was interrupted before it finished; its result is unknown."})
_CANCELLED = json.dumps({"error": "Not run: the user stopped this turn."})
_CONTEXT_RETRIES = 2

EventCallback = Callable[[AgentEvent], None]


def new_session_id(prefix: str = "agent") -> str:
    """A fresh, sortable session id: ``prefix-YYYYmmdd-HHMMSS-xxxxxx``."""
    return f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"


def _running(system: Host) -> weakref.WeakValueDictionary[str, Agent]:
    return system.stash("agent.running", weakref.WeakValueDictionary, cleanup=lambda _value: None)


class Agent:
    """A conversation between one model and the tools of ``system``.

    ``model``: a configured model name, a ``ModelClient``, or None for the default model. ``toolsets`` /
    ``disabled`` select the tools as ``system.definitions()`` does (default: ``[agent] toolsets`` of the
    config, else the system's default); ``allowed_tools`` narrows them further to these names. ``messages``
    starts the conversation (Chat Completions shape); the system prompt (``{workspace}`` is filled in) is sent
    first unless the conversation already starts with a system message; ``system_prompt=""`` sends none.
    ``max_turns`` caps model requests per ``run``. ``context_chars`` overrides the context budget (in
    characters) that is otherwise derived from the model's ``context_window``.

    ``on_event`` receives ``AgentEvent``s (text deltas, tool calls, retries, trims). Messages are announced to
    the ``on_agent_message`` hook (the built-ins record them for ``session_search``) unless ``record=False``.

    A sub-agent is made with ``parent=``: it inherits the parent's model, toolsets, allowed tools, callback and
    budget unless told otherwise, gets the session id ``<parent>/<n>`` and depth ``parent.depth + 1``, and is
    cancelled with its parent.
    """

    def __init__(
        self,
        system: Host,
        *,
        model: str | ModelClient | None = None,
        toolsets: Iterable[str] | None = None,
        disabled: Iterable[str] | None = None,
        allowed_tools: Collection[str] | None = None,
        system_prompt: str | None = None,
        max_turns: int | None = None,
        session_id: str | None = None,
        messages: Iterable[Mapping[str, Any]] = (),
        on_event: EventCallback | None = None,
        record: bool | None = None,
        context_chars: int | None = None,
        parent: Agent | None = None,
    ) -> None:
        settings = system.config.data.get("agent") or {}
        self.system = system
        self.parent = parent
        self.depth: int = parent.depth + 1 if parent is not None else 0
        if model is None and parent is not None:
            self.client: ModelClient = parent.client
        elif model is None or isinstance(model, str):
            self.client = get_model(system, model)
        else:
            self.client = model
        if toolsets is None:
            toolsets = parent.toolsets if parent is not None else settings.get("toolsets")
        self.toolsets: list[str] | None = list(toolsets) if toolsets is not None else None
        if disabled is None and parent is not None:
            disabled = parent.disabled
        self.disabled: list[str] | None = list(disabled) if disabled is not None else None
        if allowed_tools is None and parent is not None:
            allowed_tools = parent.allowed_tools
        self.allowed_tools: frozenset[str] | None = (
            frozenset(allowed_tools) if allowed_tools is not None else None
        )
        system.available(self.toolsets, self.disabled)  # an unknown toolset fails here, not mid-run
        prompt = (
            system_prompt
            if system_prompt is not None
            else settings.get("system_prompt", DEFAULT_SYSTEM_PROMPT)
        )
        self.system_prompt: str = str(prompt).replace("{workspace}", str(system.workspace))
        turns = max_turns if max_turns is not None else settings.get("max_turns", DEFAULT_MAX_TURNS)
        if int(turns) < 1:
            raise ValueError("max_turns must be at least 1")
        self.max_turns = int(turns)
        self.session_id: str = session_id or (
            f"{parent.session_id}/{next(parent._children)}" if parent is not None else new_session_id()
        )
        self.messages: list[dict[str, Any]] = [dict(m) for m in messages]
        self.on_event: EventCallback | None = (
            on_event if on_event is not None or parent is None else parent.on_event
        )
        self.record: bool = record if record is not None else (parent.record if parent is not None else True)
        self.context_chars: int | None = (
            context_chars if context_chars is not None or parent is None else parent.context_chars
        )
        self._children: itertools.count[int] = itertools.count(1)
        self._token: CancelToken = parent._token.child() if parent is not None else CancelToken()
        self._run_lock = threading.Lock()
        self._seen_ids: set[str] = set()
        self._added: list[dict[str, Any]] = []
        self._partial: list[str] = []  # the text streamed so far in this turn
        self._ceiling: int | None = None  # set when the model said the conversation was too long

    def __repr__(self) -> str:
        return f"<Agent {self.session_id} model={self.client.name} depth={self.depth}>"

    # -- public ------------------------------------------------------------------------------------------

    @classmethod
    def current(cls, context: CallContext) -> Agent | None:
        """The agent whose tool call ``context`` belongs to (None when the call did not come from an agent)."""
        if context.host is None:
            return None
        return _running(context.host).get(context.session_id)

    @property
    def cancelled(self) -> bool:
        return self._token.cancelled

    def cancel(self) -> None:
        """Stop the current run (and its sub-agents) at the next streamed chunk, tool batch or retry wait.

        Safe from any thread. The run returns with ``stop_reason="cancelled"`` and a conversation that stays
        valid for the next ``run``.
        """
        self._token.cancel()

    def run(self, prompt: str | None = None, *, messages: Iterable[Mapping[str, Any]] = ()) -> AgentResult:
        """Add ``messages`` and then ``prompt`` (as a user message) and run until the model is done.

        Never raises for model or tool failures (they end as ``stop_reason="error"`` or as tool results the
        model sees); a ``KeyboardInterrupt`` cancels the run, leaves the conversation valid, and propagates.
        """
        if not self._run_lock.acquire(blocking=False):
            raise RuntimeError(f"agent {self.session_id} is already running; one run at a time")
        running = _running(self.system)
        try:
            if self.parent is not None:  # cancelled with the parent's current run
                self._token = self.parent._token.child()
            elif self._token.cancelled:
                self._token = CancelToken()
            running[self.session_id] = self
            self._repair()
            self._added = []
            self._partial = []
            for message in messages:
                self._append(dict(message))
            if prompt is not None:
                self._append({"role": "user", "content": prompt})
            try:
                result = self._loop()
            except KeyboardInterrupt:
                self._token.cancel()
                if self._partial:  # the user saw this much of the answer: keep it in the conversation
                    self._append({"role": "assistant", "content": "".join(self._partial)})
                self._repair()
                raise
            self._emit(AgentFinished(self.session_id, self.depth, result))
            return result
        finally:
            if running.get(self.session_id) is self:
                del running[self.session_id]
            self._run_lock.release()

    async def arun(
        self, prompt: str | None = None, *, messages: Iterable[Mapping[str, Any]] = ()
    ) -> AgentResult:
        """``run`` for async hosts, on a worker thread; cancelling the awaiting task cancels the run."""
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(None, functools.partial(self.run, prompt, messages=list(messages)))
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            self.cancel()
            await asyncio.wait([future])
            raise

    # -- the loop ----------------------------------------------------------------------------------------

    def _loop(self) -> AgentResult:
        outcomes: list[CallOutcome] = []
        usage = Usage()
        turns = 0
        context_retries = 0
        text = ""

        def finish(stop: StopReason, error: str | None = None) -> AgentResult:
            return AgentResult(
                text=text,
                stop_reason=stop,
                turns=turns,
                session_id=self.session_id,
                model=self.client.name,
                tool_calls=outcomes,
                usage=usage,
                error=error,
                messages=list(self._added),
            )

        while True:
            if self._token.cancelled:
                return finish("cancelled")
            if turns >= self.max_turns:
                return finish("max_turns")
            turns += 1
            self._emit(TurnStarted(self.session_id, self.depth, turns))
            self._partial = []
            tools = self._definitions()
            request = self._request(tools)
            try:
                reply = self.client.complete(
                    request,
                    tools,
                    on_text=self._on_text,
                    on_retry=self._on_retry,
                    cancel=self._token,
                )
            except ModelError as err:
                if err.kind == "cancelled":
                    return finish("cancelled")
                if err.kind == "context_length" and context_retries < _CONTEXT_RETRIES:
                    context_retries += 1
                    # what was sent is too much for this model: aim well below it from now on
                    self._ceiling = int(conversation_chars(self.messages) * 0.6)
                    turns -= 1
                    log.info("agent %s: %s; trimming harder and trying again", self.session_id, err.message)
                    continue
                return finish("error", err.message)
            except Exception as err:  # a host's own client that breaks
                log.exception("agent %s: the model client failed", self.session_id)
                return finish("error", f"{type(err).__name__}: {err}")
            usage.add(reply.usage)
            if reply.stop_reason == "cancelled":
                self._partial = []
                if reply.text:
                    text = reply.text
                    self._append({"role": "assistant", "content": reply.text})
                return finish("cancelled")
            calls = self._unique_ids(reply.tool_calls)
            reply.tool_calls = calls
            self._append(reply.message())
            self._partial = []
            if reply.text:
                text = reply.text
            if not calls:
                return finish("done")
            outcomes.extend(self._run_tools(calls))

    def _selection(self) -> tuple[list[str] | None, list[str] | None]:
        """``(enabled, disabled)`` for definitions and calls: the toolsets, narrowed to ``allowed_tools`` by name
        when given (so deferral and ``tool_search`` work within the allowed tools only)."""
        if self.allowed_tools is None:
            return self.toolsets, self.disabled
        return sorted(self.system.available(self.toolsets, self.disabled) & self.allowed_tools), []

    def _definitions(self) -> list[dict[str, Any]]:
        # re-rendered every turn for this session: what its tool searches loaded is sent from the next turn on
        enabled, disabled = self._selection()
        return self.system.definitions(
            enabled, disabled, format=self.client.tool_format, session_id=self.session_id
        )

    def _request(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        prompt = (
            self.system_prompt if not (self.messages and self.messages[0].get("role") == "system") else ""
        )
        fixed = len(json.dumps(tools)) + len(prompt)
        budget = budget_chars(
            self.client.context_window, self.client.max_output_tokens, fixed, override=self.context_chars
        )
        if self._ceiling is not None:
            budget = min(budget, self._ceiling)
        report = fit_messages(self.messages, budget)
        if report:
            self._emit(
                ContextTrimmed(
                    self.session_id,
                    self.depth,
                    report.chars_removed,
                    report.messages_dropped,
                    report.results_cut,
                )
            )
        if prompt:
            return [{"role": "system", "content": prompt}, *self.messages]
        return list(self.messages)

    def _unique_ids(self, calls: list[ToolCall]) -> list[ToolCall]:
        """Give a call whose id is missing or already used a fresh one (some local servers repeat ids)."""
        out = []
        for call in calls:
            call_id = call.id
            if not call_id or call_id in self._seen_ids:
                call_id = "call_" + uuid.uuid4().hex[:16]
            self._seen_ids.add(call_id)
            out.append(ToolCall(call_id, call.name, call.arguments))
        return out

    def _run_tools(self, calls: list[ToolCall]) -> list[CallOutcome]:
        for call in calls:
            self._emit(ToolCallStarted(self.session_id, self.depth, call.id, call.name, call.arguments))
        outcomes: list[CallOutcome | None] = [None] * len(calls)
        runnable: list[int] = []
        for i, call in enumerate(calls):
            if self._token.cancelled:
                outcomes[i] = CallOutcome(
                    call.name[:200], "error", _CANCELLED, call.id, error_kind="cancelled"
                )
            elif self.allowed_tools is not None and call.name not in self.allowed_tools | {SEARCH_TOOL}:
                message = json.dumps(
                    {"error": f"Tool {call.name[:100]!r} is not enabled for this conversation."}
                )
                outcomes[i] = CallOutcome(
                    call.name[:200], "error", message, call.id, error_kind="unknown_tool"
                )
            else:
                runnable.append(i)
        if runnable:
            enabled, disabled = self._selection()
            done = self.system.call_many_outcomes(
                [
                    {"id": calls[i].id, "name": calls[i].name, "arguments": calls[i].arguments}
                    for i in runnable
                ],
                enabled=enabled,
                disabled=disabled,
                session_id=self.session_id,
            )
            for i, outcome in zip(runnable, done, strict=True):
                outcome.call_id = calls[i].id
                outcomes[i] = outcome
        finished = [o for o in outcomes if o is not None]
        for call, outcome in zip(calls, finished, strict=True):
            self._append(
                {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": outcome.result}
            )
            self._emit(ToolCallFinished(self.session_id, self.depth, call.id, outcome))
        return finished

    # -- bookkeeping -------------------------------------------------------------------------------------

    def _append(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self._added.append(message)
        for call in message.get("tool_calls") or ():
            if isinstance(call, Mapping) and call.get("id"):
                self._seen_ids.add(str(call["id"]))
        if self.record:
            self._announce(message)

    def _announce(self, message: dict[str, Any]) -> None:
        """Tell every ``on_agent_message`` implementation through the hook runner (wrappers included); one that
        raises is logged and the others still run."""
        self.system.hooks.call(
            "on_agent_message", system=self.system, session_id=self.session_id, message=dict(message)
        )

    def _repair(self) -> None:
        """Give every tool call of the conversation a result (a run that was interrupted may have left some)."""
        i = 0
        while i < len(self.messages):
            msg = self.messages[i]
            i += 1
            if msg.get("role") != "assistant" or not msg.get("tool_calls"):
                continue
            wanted = [str(c.get("id", "")) for c in msg["tool_calls"] if isinstance(c, Mapping)]
            have = set()
            while i < len(self.messages) and self.messages[i].get("role") == "tool":
                have.add(str(self.messages[i].get("tool_call_id", "")))
                i += 1
            for call_id in wanted:
                if call_id not in have:
                    self.messages.insert(
                        i, {"role": "tool", "tool_call_id": call_id, "content": _INTERRUPTED}
                    )
                    i += 1

    def _emit(self, event: AgentEvent) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(event)
        except Exception:
            log.exception("agent %s: the on_event callback failed (ignored)", self.session_id)

    def _on_text(self, piece: str) -> None:
        self._partial.append(piece)
        self._emit(TextDelta(self.session_id, self.depth, piece))

    def _on_retry(self, attempt: int, delay: float, reason: str) -> None:
        self._emit(ModelRetrying(self.session_id, self.depth, attempt, delay, reason))
