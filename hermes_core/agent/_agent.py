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
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

from .._aio.cancel import CallCancelled, CancelToken, current_token, run_cancellable
from .._log import get_logger
from ..decisions import CallOutcome
from ..models import ModelClient, ModelError, ModelReply, ToolCall, Usage, get_model
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

log = get_logger("hermes.agent")

DEFAULT_MAX_TURNS = 30
DEFAULT_SYSTEM_PROMPT = (
    "You are a capable assistant with tools, working in the folder {workspace}. Use the tools when they help "
    "and check their results instead of guessing. A tool result that is an error tells you what was wrong: "
    "fix the call or choose another way. When the task is done, answer plainly and briefly."
)
_INTERRUPTED = json.dumps({"error": "This call was interrupted before it finished; its result is unknown."})
_CANCELLED = json.dumps({"error": "Not run: the user stopped this turn."})
_CONTEXT_RETRIES = 2
_GRACE = 0.5  # seconds the work of a cancelled turn gets to stop before the run returns without it
DEFAULT_STARTING_CONTEXT_CHARS = 6_000
_ENDINGS = {
    "refusal": "the model declined to answer",
    "length": "the answer was cut off at the model's output limit (raise max_tokens, or ask for less at once)",
    "content_filter": "the provider's content filter stopped the answer",
}

EventCallback = Callable[[AgentEvent], None]


class _Run:
    """One run's progress, shared by the thread that called ``run`` and the worker doing the work."""

    __slots__ = ("alive", "outcomes", "partial", "text", "turns", "usage")

    def __init__(self) -> None:
        self.alive = True  # False once run() gave up waiting: the worker then changes nothing more
        self.partial: list[str] = []  # the text streamed so far in the current turn
        self.turns = 0
        self.text = ""
        self.outcomes: list[CallOutcome] = []
        self.usage = Usage()


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
    characters) that is otherwise derived from the model's ``context_window``. ``starting_context_chars`` caps
    what the ``agent_context`` hook adds to the system prompt before each request (the built-ins: the memory
    store and an index of the skills; asked again every turn, so a memory saved mid-session shows on the next
    request); 0 adds nothing. Default: ``[agent] starting_context_chars``, else 6,000.

    ``on_event`` receives ``AgentEvent``s (text deltas, tool calls, retries, trims). Messages are announced to
    the ``on_agent_message`` hook (the built-ins record them for ``session_search``) unless ``record=False``.

    A sub-agent is made with ``parent=``: it inherits the parent's model, toolsets, allowed tools, callback and
    budgets unless told otherwise, gets the session id ``<parent>/<n>`` and depth ``parent.depth + 1``, and is
    cancelled with its parent.

    Each run works on a worker thread under the run's cancel token, so ``on_event`` is called from worker threads,
    and ``cancel()`` (or Ctrl-C in the thread that called ``run``) gets control back within about half a second
    whatever the server or a tool is doing.
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
        starting_context_chars: int | None = None,
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
        if starting_context_chars is None:
            starting_context_chars = (
                parent.starting_context_chars
                if parent is not None
                else int(settings.get("starting_context_chars", DEFAULT_STARTING_CONTEXT_CHARS))
            )
        self.starting_context_chars: int = starting_context_chars
        self._children: itertools.count[int] = itertools.count(1)
        self._token: CancelToken = parent._token.child() if parent is not None else CancelToken()
        self._run_lock = threading.Lock()
        self._state_lock = threading.Lock()  # the conversation, between run()'s thread and its worker
        self._seen_ids: set[str] = set()
        self._added: list[dict[str, Any]] = []
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
        """Stop the current run and everything it started: the model request, the running tool calls (a
        command's whole process tree is killed), the sub-agents with their tools and approval prompts (an
        approval asked for the cancelled turn is a denial, whenever the answer comes).

        Safe from any thread; returns at once, and ``run`` returns within about half a second with
        ``stop_reason="cancelled"`` and a conversation that stays valid for the next ``run``.
        """
        self._token.cancel()

    def run(self, prompt: str | None = None, *, messages: Iterable[Mapping[str, Any]] = ()) -> AgentResult:
        """Add ``messages`` and then ``prompt`` (as a user message) and run until the model is done.

        Never raises for model or tool failures (they end as ``stop_reason="error"`` or as tool results the
        model sees); a ``KeyboardInterrupt`` cancels the run, leaves the conversation valid, and propagates.
        A run made inside a tool call (a sub-agent) is cancelled with the turn that made the call.
        """
        if not self._run_lock.acquire(blocking=False):
            raise RuntimeError(f"agent {self.session_id} is already running; one run at a time")
        running = _running(self.system)
        try:
            outer = self.parent._token if self.parent is not None else current_token()
            if outer is not None:  # cancelled with the parent's current turn
                self._token = outer.child()
            elif self._token.cancelled:
                self._token = CancelToken()
            running[self.session_id] = self
            self._repair()
            self._added = []
            for message in messages:
                self._append(dict(message))
            if prompt is not None:
                self._append({"role": "user", "content": prompt})
            state = _Run()
            try:
                try:  # the work runs on a worker, so this thread gets control back however it is stuck
                    result = run_cancellable(self._token, _GRACE, self._loop, state)
                except CallCancelled:  # the work did not stop in time: it ends on its own, unheard
                    self._detach(state)
                    state.text = self._keep_partial(state, detached=True) or state.text
                    self._repair()
                    result = self._result(state, "cancelled")
            except KeyboardInterrupt:
                self._token.cancel()
                self._detach(state)
                # the user saw this much of the answer: keep it in the conversation
                self._keep_partial(state, detached=True)
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

    # -- the loop (on a worker, under the run's cancel token) ---------------------------------------------

    def _result(self, state: _Run, stop: StopReason, error: str | None = None) -> AgentResult:
        return AgentResult(
            text=state.text,
            stop_reason=stop,
            turns=state.turns,
            session_id=self.session_id,
            model=self.client.name,
            tool_calls=list(state.outcomes),
            usage=state.usage,
            error=error,
            messages=list(self._added),
        )

    def _loop(self, state: _Run) -> AgentResult:
        context_retries = 0
        finish = functools.partial(self._result, state)
        while True:
            if self._token.cancelled:
                return finish("cancelled")
            if state.turns >= self.max_turns:
                return finish("max_turns")
            state.turns += 1
            self._emit(TurnStarted(self.session_id, self.depth, state.turns), state)
            tools = self._definitions()
            request = self._request(tools, state)
            parts: list[str] = []
            state.partial = parts
            try:
                reply = self._complete(request, tools, parts, state)
            except ModelError as err:
                if err.kind == "cancelled":
                    state.text = self._keep_partial(state) or state.text
                    return finish("cancelled")
                if err.kind == "context_length" and context_retries < _CONTEXT_RETRIES and not parts:
                    context_retries += 1
                    # what was sent is too much for this model: aim well below it from now on
                    self._ceiling = int(conversation_chars(self.messages) * 0.6)
                    state.turns -= 1
                    log.info("agent %s: %s; trimming harder and trying again", self.session_id, err.message)
                    continue
                state.text = self._keep_partial(state) or state.text
                return finish("error", err.message)
            except Exception as err:  # a host's own client that breaks
                log.exception("agent %s: the model client failed", self.session_id)
                state.text = self._keep_partial(state) or state.text
                return finish("error", f"{type(err).__name__}: {err}")
            state.usage.add(reply.usage)
            state.partial = []
            if reply.stop_reason == "cancelled":
                if reply.text:
                    state.text = reply.text
                    self._add(state, {"role": "assistant", "content": reply.text})
                return finish("cancelled")
            calls = self._unique_ids(reply.tool_calls)
            if reply.stop_reason == "length":
                calls = []  # cut off while writing them: their arguments are incomplete, never run them
            reply.tool_calls = calls
            self._add(state, reply.message())
            if reply.text or reply.refusal:
                state.text = reply.text or reply.refusal
            ending = _ENDINGS.get(reply.stop_reason)
            if ending is not None:
                detail = f": {reply.refusal}" if reply.refusal and reply.text else ""
                return finish(cast(StopReason, reply.stop_reason), ending + detail)
            if not calls:
                return finish("done")
            state.outcomes.extend(self._run_tools(calls, state))

    def _complete(
        self, request: list[dict[str, Any]], tools: list[dict[str, Any]], parts: list[str], state: _Run
    ) -> ModelReply:
        return self.client.complete(
            request,
            tools,
            on_text=functools.partial(self._on_text, parts, state),
            on_retry=functools.partial(self._on_retry, state),
            cancel=self._token,
        )

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

    def _system_text(self) -> str:
        """The system prompt of the next request: ours, then what plugins give the agent to start with."""
        if not self.system_prompt or (self.messages and self.messages[0].get("role") == "system"):
            return ""
        context = self._starting_context()
        return f"{self.system_prompt}\n\n{context}" if context else self.system_prompt

    def _starting_context(self) -> str:
        """The ``agent_context`` hook's sections (the built-ins: the memory store, the skills index), capped."""
        limit = self.starting_context_chars
        if limit <= 0:
            return ""
        enabled, disabled = (
            self._selection()
        )  # what it may use, deferred tools included (tool_search finds them)
        names = self.system.available(enabled, disabled)
        try:
            sections = self.system.hooks.call(
                "agent_context", system=self.system, session_id=self.session_id, tools=names
            )
        except Exception:  # a hook wrapper that breaks: no starting context this turn, the run goes on
            log.exception("agent %s: an agent_context hook wrapper failed (ignored)", self.session_id)
            return ""
        text = "\n\n".join(str(s).strip() for s in sections or () if isinstance(s, str) and s.strip())
        if len(text) > limit:
            text = text[:limit].rstrip() + "\n[... cut to fit the starting context's limit ...]"
        return text

    def _request(self, tools: list[dict[str, Any]], state: _Run) -> list[dict[str, Any]]:
        prompt = self._system_text()
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
                ),
                state,
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

    def _run_tools(self, calls: list[ToolCall], state: _Run) -> list[CallOutcome]:
        for call in calls:
            self._emit(
                ToolCallStarted(self.session_id, self.depth, call.id, call.name, call.arguments), state
            )
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
            self._add(
                state, {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": outcome.result}
            )
            self._emit(ToolCallFinished(self.session_id, self.depth, call.id, outcome), state)
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
        """Hand the message to the ``on_agent_message`` hook through the system's hook runner (wrappers included;
        an implementation that raises is logged and the others still run)."""
        try:
            self.system.hooks.call(
                "on_agent_message", system=self.system, session_id=self.session_id, message=dict(message)
            )
        except Exception:  # a hook wrapper that raised: recording is not worth stopping the run for
            log.exception("agent %s: an on_agent_message hook wrapper failed (ignored)", self.session_id)

    def _add(self, state: _Run, message: dict[str, Any]) -> None:
        """``_append`` for the worker: once the caller gave up on it (``_detach``), it changes nothing more."""
        with self._state_lock:
            if not state.alive:
                raise CallCancelled
            self._append(message)

    def _detach(self, state: _Run) -> None:
        """The caller takes the conversation back from a worker that is still running."""
        with self._state_lock:
            state.alive = False

    def _keep_partial(self, state: _Run, *, detached: bool = False) -> str:
        """Put the text streamed so far in this turn into the conversation (the user saw it); returns it.
        ``detached``: called by run()'s thread after it took the conversation back from the worker."""
        partial, state.partial = "".join(state.partial), []
        if partial:
            message = {"role": "assistant", "content": partial}
            if detached:
                self._append(message)
            else:
                self._add(state, message)
        return partial

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

    def _emit(self, event: AgentEvent, state: _Run | None = None) -> None:
        if self.on_event is None or (state is not None and not state.alive):
            return
        try:
            self.on_event(event)
        except Exception:
            log.exception("agent %s: the on_event callback failed (ignored)", self.session_id)

    def _on_text(self, parts: list[str], state: _Run, piece: str) -> None:
        if self._token.cancelled:  # a request that did not stop in time: its late text goes nowhere
            return
        parts.append(piece)
        self._emit(TextDelta(self.session_id, self.depth, piece), state)

    def _on_retry(self, state: _Run, attempt: int, delay: float, reason: str) -> None:
        self._emit(ModelRetrying(self.session_id, self.depth, attempt, delay, reason), state)
