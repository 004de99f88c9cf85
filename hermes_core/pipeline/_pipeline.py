"""The call pipeline: name -> parse/coerce/validate -> pre hooks -> approval -> dispatch -> transform
-> sanitize -> limit -> post hooks. Every outcome is a ``CallOutcome`` whose ``result`` is what the model sees.

``run`` never raises: a malformed call, a blocking hook, a denial, a timeout or a crashing handler all
end as a result string the model can act on. Post hooks run last so that they observe the final,
redacted outcome (no secret ever reaches an observer plugin) with the duration of the whole call.

The pipeline is given what it needs by its tool system (``Pipeline.__init__``): a read-only view of the
registry, the selection function, the configuration, the hook runner, the security gate and a context
factory. Each call travels through the stages as one ``_Call``.
"""

from __future__ import annotations

import contextvars
import functools
import itertools
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .._aio.cancel import CallCancelled, CancelToken, cancellable, current_token, interrupt_on_cancel
from .._aio.watchdog import HandlerTimeout, Watchdog
from .._signatures import handler_shape
from ..context import ApprovalDenied, CallContext, Guard
from ..decisions import CallOutcome, RequireApproval, Status, ToolOutput
from ..errors import ToolError
from ..plugins._hooks import HookRunner, HookStop
from ..registry import ToolEntry
from ..schema import ToolArgumentError
from ._results import limit_result, neutralise_markup

if TYPE_CHECKING:
    import concurrent.futures as cf

    from .._aio.shared_loop import SharedLoop
    from ..config import Config

__all__ = ["ContextFactory", "Pipeline", "Selection"]

log = logging.getLogger("hermes.pipeline")

Names = Any  # Sequence[str] | str | None, as ``ToolSystem`` takes them


class Selection(Protocol):
    """What the selection function returns: the tools a caller may run now, and why others are hidden."""

    @property
    def available(self) -> frozenset[str]: ...

    @property
    def hidden(self) -> dict[str, str]: ...


class ContextFactory(Protocol):
    """Makes the ``CallContext`` of one call (the tool system supplies it)."""

    def __call__(
        self,
        call_id: str,
        session_id: str | None,
        tool_name: str,
        enabled: frozenset[str],
        approver: Any,
        ask_user: Any,
    ) -> CallContext: ...


class _Runtime:
    """What the pipeline compiles once per tool: argument processor, calling style, limits."""

    __slots__ = ("dict_style", "keywords_only", "limit", "plain", "process", "timeout", "wants_context")

    def __init__(self, entry: ToolEntry, pipeline: Pipeline) -> None:
        from ..schema import compile_arguments

        cfg = pipeline.config
        self.process = compile_arguments(entry.parameters, max_length=cfg.max_argument_chars)
        shape = handler_shape(entry.handler, entry.parameters, entry.handler_style)
        self.dict_style = shape.style == "dict"
        self.wants_context = shape.wants_context
        self.keywords_only = not self.dict_style and not self.wants_context  # handler(**arguments)
        overrides = cfg.tool_limits(entry.name)
        self.limit: int = int(
            overrides.get("max_result_chars") or entry.max_result_size_chars or cfg.max_result_chars
        )
        timeout = overrides.get("timeout", entry.timeout if entry.timeout is not None else cfg.timeout)
        self.timeout: float | None = float(timeout) if timeout else None
        if self.timeout is not None:
            pipeline.watchdog.start()  # the inline path of run() arms deadlines without starting it
        # eligible for the inline path of Pipeline.run: a sync keyword handler without a context parameter
        self.plain = not entry.is_async and self.keywords_only and entry.name not in pipeline.always_ask

    def invoke(self, handler: Callable[..., Any], args: dict[str, Any], ctx: CallContext | None) -> Any:
        """Call ``handler`` in its style (for an async handler: make its coroutine)."""
        if self.dict_style:
            return handler(args, context=ctx) if self.wants_context else handler(args)
        return handler(**args, context=ctx) if self.wants_context else handler(**args)


class _Call:
    """One call on its way through the stages."""

    __slots__ = (
        "approver",
        "args",
        "ask_user",
        "call_id",
        "ctx",
        "entry",
        "name",
        "rt",
        "session_id",
        "started",
    )

    def __init__(
        self,
        name: Any,
        call_id: str,
        session_id: str | None,
        started: float,
        approver: Any = None,
        ask_user: Any = None,
    ) -> None:
        self.name = name
        self.call_id = call_id
        self.session_id = session_id
        self.started = started
        self.approver = approver  # the caller's own approver and user (an MCP client, a chat UI), if any
        self.ask_user = ask_user
        self.entry: ToolEntry | None = None
        self.rt: _Runtime | None = None
        self.args: dict[str, Any] = {}
        self.ctx: CallContext | None = None


def _new_id() -> str:
    return os.urandom(6).hex()


_CALL_PREFIX = os.urandom(3).hex() + "-"
_perf_counter = time.perf_counter
_monotonic = time.monotonic
_get_ident = threading.get_ident
_call_numbers = itertools.count(1)  # call ids: _CALL_PREFIX + a number, unique in the process


def _new_call_id() -> str:
    return _CALL_PREFIX + str(next(_call_numbers))


def _error_text(message: str, **extra: Any) -> str:
    return json.dumps({"error": message, **extra}, ensure_ascii=False)


def _fail(name: str, status: Status, kind: str, message: str, error_id: str | None = None) -> CallOutcome:
    extra = {"error_id": error_id} if error_id else {}
    return CallOutcome(
        name=name, status=status, result=_error_text(message, **extra), error_kind=kind, error_id=error_id
    )


class Pipeline:
    """Runs tool calls for one tool system.

    ``tools`` is a live read-only view of the registry; ``select(enabled, disabled, disabled_tools)`` the
    selection; ``hooks`` the plugin host's hook runner; ``guard`` the security gate (built on first use);
    ``new_context`` makes each call's ``CallContext``; over-long results are saved under ``results_dir``.
    """

    def __init__(
        self,
        *,
        tools: Mapping[str, ToolEntry],
        select: Callable[[Names, Names, Names], Selection],
        config: Config,
        hooks: HookRunner,
        guard: Guard,
        new_context: ContextFactory,
        results_dir: Path,
    ) -> None:
        self.tools = tools
        self.select = select
        self.config = config
        self.hooks = hooks
        self.results_dir = results_dir
        self.guard = guard
        self._new_context = new_context
        self._bridge: SharedLoop | None = None
        self.watchdog = Watchdog()
        self.closers: list[Callable[[], Any]] = []
        self._threads: cf.ThreadPoolExecutor | None = None
        self._pool_size = 0
        self._redact: Callable[[str], str] | None = None
        self._armed = self.watchdog.armed
        self._tokens = self.watchdog.tokens
        always = config.approvals.get("tools", ())
        # [approvals] tools: these tools need a human's approval for every call
        self.always_ask = frozenset([always] if isinstance(always, str) else always)
        self._plain = False  # no hooks and no tracing: calls may take the inline path of run()
        self._pre = self._post = self._transform = self._hooks_want_context = False
        self.refresh_hooks()

    # -- setup -------------------------------------------------------------------------------------------

    def refresh_hooks(self) -> None:
        """Re-read the hook implementations (after plugins are added or removed)."""
        hooks = self.hooks
        hooks.refresh()
        self._pre, self._post, self._transform = bool(hooks.pre), bool(hooks.post), bool(hooks.transform)
        self._hooks_want_context = hooks.wants_context
        self._run_pre, self._run_post, self._run_transform = (
            hooks.run_pre,
            hooks.run_post,
            hooks.run_transform,
        )
        self._plain = not hooks.active

    @property
    def bridge(self) -> SharedLoop:
        """The system's one event loop for async handlers (see ``_shared_loop``), made on first use."""
        bridge = self._bridge
        if bridge is None:
            from .._aio.shared_loop import SharedLoop

            bridge = self._bridge = SharedLoop(self.watchdog)
        return bridge

    def _load_redactor(self) -> Callable[[str], str]:
        from ..security import redact  # the security layer loads with the first result it must sanitise

        self._redact = redact
        return redact

    def _runtime(self, entry: ToolEntry) -> _Runtime:
        rt = entry._runtime = _Runtime(entry, self)
        return rt

    # -- the stages --------------------------------------------------------------------------------------

    def _refuse_name(self, name: Any, available: frozenset[str]) -> str:
        entry = self.tools.get(name) if isinstance(name, str) else None
        import difflib

        close = difflib.get_close_matches(str(name), sorted(available), n=3, cutoff=0.5)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        if entry is None:
            return f"Unknown tool {str(name)[:100]!r}.{hint}"
        hidden = self.select(None, None, None).hidden.get(name)
        if hidden:
            return f"Tool {name!r} is not available right now ({hidden}).{hint}"
        return f"Tool {name!r} is not enabled for this conversation.{hint}"

    def _approve(self, call: _Call, asks: list[RequireApproval]) -> CallOutcome | None:
        assert call.ctx is not None
        name, args = call.name, call.args
        reason = "; ".join(a.reason for a in asks)
        subject = next((a.subject for a in asks if a.subject), None)
        if subject is None:
            subject = f"{name} {json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)}"
        try:
            self.guard.request_approval("tool", subject, reason, call.ctx)
        except ApprovalDenied as err:
            return _fail(name, "denied", "approval", f"Denied: {err.message}")
        except Exception:  # an approval flow that breaks denies (fail closed)
            log.exception("approval flow failed for %r; denying", name)
            return _fail(name, "denied", "approval", "Denied: the approval could not be obtained.")
        return None

    def _handler_failed(self, call: _Call, err: BaseException) -> CallOutcome:
        outcome = self._outcome_of_failure(call.name, err, call.rt)
        outcome.call_id = call.call_id
        return outcome

    @staticmethod
    def _outcome_of_failure(name: str, err: BaseException, rt: _Runtime | None) -> CallOutcome:
        if isinstance(err, ApprovalDenied):
            return _fail(name, "denied", "approval", f"Denied: {err.message}")
        if isinstance(err, CallCancelled):
            return _cancelled(name)
        if isinstance(err, ToolError):
            return _fail(name, "error", err.kind, err.message)
        if isinstance(err, (HandlerTimeout, TimeoutError)):
            seconds = rt.timeout if rt is not None else None
            return _fail(
                name,
                "error",
                "timeout",
                f"The tool {name!r} timed out after {seconds:g} s and was stopped."
                if seconds
                else f"The tool {name!r} timed out.",
            )
        error_id = _new_id()
        log.error("tool %r raised %s (error id %s)", name, type(err).__name__, error_id, exc_info=err)
        return _fail(
            name,
            "error",
            "exception",
            f"The tool {name!r} failed with an internal error (error id {error_id}); the details are in the log.",
            error_id=error_id,
        )

    def _finish(self, call: _Call, outcome: CallOutcome, value: Any = None) -> CallOutcome:
        """Transform, sanitize and limit the result, then let post hooks observe the outcome."""
        name, entry, rt = outcome.name, call.entry, call.rt
        if outcome.status == "ok":
            if type(value) is ToolOutput:  # text plus attachments (images, files) for the host
                outcome.attachments = value.attachments
                value = value.text
            text = value if type(value) is str else _render(value)
            if self._transform and entry is not None:
                text = self._run_transform(name, call.args, entry, call.ctx, text)
            outcome.result = text
        text = (self._redact or self._load_redactor())(outcome.result)
        if "<" in text or "[" in text:
            text = neutralise_markup(text)
        limit = rt.limit if rt is not None else self.config.max_result_chars
        if len(text) > limit:
            text, saved = limit_result(text, limit, self.results_dir, outcome.call_id, name)
            outcome.truncated = True
            outcome.full_output_path = str(saved) if saved is not None else None
        outcome.result = text
        outcome.duration_ms = (_perf_counter() - call.started) * 1000
        if self._post:
            self._run_post(name, call.args, entry, call.ctx, outcome)
        return outcome

    # -- entry points ------------------------------------------------------------------------------------

    def _context(self, call: _Call, available: frozenset[str]) -> CallContext:
        return self._new_context(
            call.call_id, call.session_id, str(call.name), available, call.approver, call.ask_user
        )

    def _prepare(self, call: _Call, raw: Any, enabled: Names, disabled: Names) -> CallOutcome | None:
        """The stages before dispatch: fills in ``call``, or returns the outcome that ends it early (refused,
        invalid, blocked, denied)."""
        name = call.name
        available = self.select(enabled, disabled, None).available
        entry = call.entry = self.tools.get(name) if type(name) is str else None
        if self._hooks_want_context:  # hooks see the context of every call, failed ones too
            call.ctx = self._context(call, available)
        if entry is None or name not in available:
            out = _fail(str(name)[:200], "error", "unknown_tool", self._refuse_name(name, available))
            out.call_id = call.call_id
            return out
        rt = entry._runtime
        try:
            if rt is None:  # compiled on first call; a replaced tool is a new entry
                rt = self._runtime(entry)
            call.args = rt.process(raw)
        except ToolArgumentError as err:
            out = _fail(name, "error", "invalid_arguments", str(err))
            out.call_id = call.call_id
            return out
        call.rt = rt
        if call.ctx is None and rt.wants_context:
            call.ctx = self._context(call, available)
        asks: list[RequireApproval] | None = None
        if self._pre:
            try:
                call.args, asks = self._run_pre(name, call.args, entry, call.ctx, rt.process)
            except HookStop as stop:
                out = _fail(name, "blocked", stop.kind, stop.message, error_id=stop.error_id)
                out.call_id = call.call_id
                return out
        if name in self.always_ask:
            asks = [
                *(asks or ()),
                RequireApproval(f"the configuration asks for approval of every {name!r} call"),
            ]
        if asks:
            if call.ctx is None:
                call.ctx = self._context(call, available)
            denied = self._approve(call, asks)
            if denied is not None:
                denied.call_id = call.call_id
                return denied
        return None

    def run(
        self,
        name: str,
        raw: Any,
        enabled: Names = None,
        disabled: Names = None,
        session_id: str | None = None,
        call_id: str | None = None,
        approver: Any = None,
        ask_user: Any = None,
    ) -> CallOutcome:
        """Run one call synchronously. Never raises.

        The common case (no hooks, a sync handler that takes no context, valid arguments, a result within its
        limit) runs inline below: the stages are the same as on the general path, only without the calls
        between them, which are most of the pipeline's cost at this size. Anything else leaves it early.
        """
        started = _perf_counter()
        if self._plain and type(name) is str and current_token() is None:
            try:
                entry = self.tools.get(name)
                rt = entry._runtime if entry is not None else None
                if rt is not None and rt.plain and name in self.select(enabled, disabled, None).available:
                    assert entry is not None
                    args = rt.process(raw)  # invalid arguments raise: the general path reports them
                    call_id = call_id or _CALL_PREFIX + str(next(_call_numbers))
                    try:
                        if rt.timeout is None:
                            value = entry.handler(**args)
                        else:  # Watchdog.arm/disarm, inlined
                            armed = self._armed
                            token = next(self._tokens)
                            armed[token] = (_monotonic() + rt.timeout, _get_ident())
                            try:
                                value = entry.handler(**args)
                            finally:
                                if armed.pop(token, None) is None and self.watchdog.fired(token):
                                    raise HandlerTimeout
                    except (Exception, HandlerTimeout) as err:
                        call = _Call(name, call_id, session_id, started)
                        call.entry, call.rt, call.args = entry, rt, args
                        return self._finish(call, self._handler_failed(call, err))
                    if type(value) is str:
                        text = value
                    elif type(value) is ToolOutput:  # attachments: the general result stage keeps them
                        call = _Call(name, call_id, session_id, started)
                        call.entry, call.rt, call.args = entry, rt, args
                        return self._finish(call, CallOutcome(name, "ok", "", call_id), value)
                    else:
                        text = _render(value)
                    text = (self._redact or self._load_redactor())(text)
                    if "<" in text or "[" in text:
                        text = neutralise_markup(text)
                    if len(text) <= rt.limit:
                        return CallOutcome(name, "ok", text, call_id, (_perf_counter() - started) * 1000)
                    call = _Call(name, call_id, session_id, started)
                    call.entry, call.rt, call.args = entry, rt, args
                    return self._finish(call, CallOutcome(name, "ok", "", call_id), text)
            except (KeyboardInterrupt, SystemExit):
                raise
            except ToolArgumentError:
                pass  # the general path below parses again and reports the problem
            except BaseException:  # the last line of defence (a late HandlerTimeout included): never raise
                return self._internal_error(name)
        call = _Call(name, call_id or _new_call_id(), session_id, started, approver, ask_user)
        try:
            early = self._prepare(call, raw, enabled, disabled)
            if early is not None:
                return self._finish(call, early)
            entry, rt = call.entry, call.rt
            assert entry is not None and rt is not None
            scope = current_token()
            try:
                if scope is None:
                    if entry.is_async:
                        value = self.bridge.run(rt.invoke(entry.handler, call.args, call.ctx), rt.timeout)
                    else:
                        value = self._run_sync(entry, call.args, call.ctx, rt)
                else:
                    value = self._run_under(scope, entry, call.args, call.ctx, rt)
            except (Exception, HandlerTimeout, CallCancelled) as err:
                return self._finish(call, self._handler_failed(call, err))
            return self._finish(call, CallOutcome(name, "ok", "", call.call_id), value)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException:  # the last line of defence (a late HandlerTimeout included): never raise
            return self._internal_error(name)

    async def arun(
        self,
        name: str,
        raw: Any,
        enabled: Names = None,
        disabled: Names = None,
        session_id: str | None = None,
        call_id: str | None = None,
        approver: Any = None,
        ask_user: Any = None,
    ) -> CallOutcome:
        """Run one call without blocking the caller's loop: async handlers on the system's loop (the caller's
        own, see ``_shared_loop``), sync ones on a worker thread. Never raises (except cancellation of the
        awaiting task)."""
        import asyncio

        call = _Call(name, call_id or _new_call_id(), session_id, _perf_counter(), approver, ask_user)
        try:
            early = self._prepare(call, raw, enabled, disabled)
            if early is not None:
                return self._finish(call, early)
            entry, rt = call.entry, call.rt
            assert entry is not None and rt is not None
            token = current_token()
            try:
                loop = asyncio.get_running_loop()
                if not entry.is_async:  # on a worker thread (with this task's context), so the loop runs on
                    work = self._run_sync if token is None else functools.partial(self._run_under, token)
                    value = await loop.run_in_executor(
                        self._executor(), contextvars.copy_context().run, work, entry, call.args, call.ctx, rt
                    )
                elif self.bridge.claim(loop):  # native: right here, in the awaiting task
                    coro = rt.invoke(entry.handler, call.args, call.ctx)
                    if token is not None:
                        coro = cancellable(coro, token)
                    value = await coro if rt.timeout is None else await self._timed(coro, rt.timeout, loop)
                else:  # the system's loop is another one: hand over without blocking this loop
                    coro = rt.invoke(entry.handler, call.args, call.ctx)
                    if token is not None:
                        coro = cancellable(coro, token)
                    value = await self.bridge.run_elsewhere(coro, rt.timeout, self._executor())
            except (Exception, HandlerTimeout, CallCancelled) as err:
                return self._finish(call, self._handler_failed(call, err))
            return self._finish(call, CallOutcome(name, "ok", "", call.call_id), value)
        except asyncio.CancelledError:
            raise
        except Exception:
            return self._internal_error(name)

    async def _timed(self, coro: Any, timeout: float, loop: Any) -> Any:
        """Await ``coro`` in the current task, cancelled by the watchdog when ``timeout`` passes (a loop timer
        per call, as ``asyncio.timeout`` arms, costs more than the whole native call); ``TimeoutError`` then.

        The cancel is delivered on the loop's own thread and only while the await is still pending, so a
        deadline that passes just as the call ends never cancels the caller's task.
        """
        import asyncio

        task = asyncio.current_task()
        assert task is not None
        pending = [True]
        fired: list[bool] = []

        def cancel() -> None:  # on the loop thread
            if pending[0]:
                fired.append(True)
                task.cancel()

        token = self.watchdog.arm_call(timeout, lambda: loop.call_soon_threadsafe(cancel))
        try:
            value = await coro
        except asyncio.CancelledError:
            if fired and task.uncancel() == 0:
                raise TimeoutError(f"timed out after {timeout:g} s") from None
            raise
        else:
            if fired:  # the handler swallowed our cancel: take it back, the caller's task owes nothing
                task.uncancel()
            return value
        finally:
            pending[0] = False
            self._armed.pop(token, None)

    def _internal_error(self, name: Any) -> CallOutcome:
        error_id = _new_id()
        log.exception("internal error in the call pipeline for %r (error id %s)", name, error_id)
        message = f"Internal error while running the tool (error id {error_id})."
        return _fail(str(name)[:200], "error", "exception", message, error_id=error_id)

    def _run_sync(
        self,
        entry: ToolEntry,
        args: dict[str, Any],
        ctx: CallContext | None,
        rt: _Runtime,
        scope: CancelToken | None = None,
    ) -> Any:
        """Call a sync handler on this thread, interrupted by the watchdog when its timeout passes (and, with a
        ``scope``, when that token is cancelled: the interruption covers the handler alone, never the
        bookkeeping around it)."""
        if rt.timeout is None:
            if scope is None:
                return entry.handler(**args) if rt.keywords_only else rt.invoke(entry.handler, args, ctx)
            with interrupt_on_cancel(scope):
                return rt.invoke(entry.handler, args, ctx)
        armed = self._armed  # Watchdog.arm/disarm, inlined (this is on every call's path)
        token = next(self._tokens)
        armed[token] = (_monotonic() + rt.timeout, _get_ident())
        try:
            if scope is None:
                return entry.handler(**args) if rt.keywords_only else rt.invoke(entry.handler, args, ctx)
            with interrupt_on_cancel(scope):
                return rt.invoke(entry.handler, args, ctx)
        finally:
            if armed.pop(token, None) is None and self.watchdog.fired(token):
                raise HandlerTimeout

    def _run_under(
        self,
        token: CancelToken,
        entry: ToolEntry,
        args: dict[str, Any],
        ctx: CallContext | None,
        rt: _Runtime,
    ) -> Any:
        """Dispatch a call made under a cancel token (an agent's turn): cancelling the token stops the handler
        (``CallCancelled`` in a sync handler's thread, its task cancelled for an async one)."""
        if token.cancelled:
            raise CallCancelled
        if entry.is_async:
            return self.bridge.run(cancellable(rt.invoke(entry.handler, args, ctx), token), rt.timeout)
        return self._run_sync(entry, args, ctx, rt, token)

    def _executor(self, size: int | None = None) -> cf.ThreadPoolExecutor:
        """The worker pool (``[limits] max_parallel_calls`` threads, made on demand); ``size`` grows it."""
        wanted = max(size or 0, self.config.max_parallel_calls)
        if self._threads is None or wanted > self._pool_size:
            import concurrent.futures as cf

            old = self._threads
            self._threads = cf.ThreadPoolExecutor(max_workers=wanted, thread_name_prefix="hermes-call")
            self._pool_size = wanted
            if old is not None:  # its running calls finish on their own threads
                old.shutdown(wait=False)
        return self._threads

    # -- one model turn ----------------------------------------------------------------------------------

    def run_many(
        self,
        calls: list[Any],
        enabled: Names,
        disabled: Names,
        session_id: str | None,
        max_parallel: int | None = None,
        approver: Any = None,
        ask_user: Any = None,
    ) -> list[CallOutcome]:
        """Consecutive parallel-safe calls run concurrently (at most ``max_parallel`` at a time, by default
        ``[limits] max_parallel_calls``); any other call waits for them and runs alone."""
        parallel = max_parallel if max_parallel is not None else self.config.max_parallel_calls
        if parallel < 1:
            raise ValueError(f"max_parallel must be at least 1, got {parallel}")
        parsed = [_split_call(c) for c in calls]
        results: list[CallOutcome | None] = [None] * len(parsed)
        batch: list[int] = []

        def one(i: int) -> CallOutcome:
            name, raw, call_id = parsed[i]
            return self.run(name, raw, enabled, disabled, session_id, call_id, approver, ask_user)

        def flush() -> None:
            if len(batch) == 1 or (batch and parallel == 1):
                for i in batch:
                    results[i] = one(i)
            elif batch:
                pool = self._executor(min(parallel, len(batch)))
                gate = threading.BoundedSemaphore(parallel)

                def gated(i: int) -> CallOutcome:
                    with gate:
                        return one(i)

                # each call keeps the caller's context (its cancel token, its workspace)
                futures = {i: pool.submit(contextvars.copy_context().run, gated, i) for i in batch}
                for i, fut in futures.items():
                    results[i] = fut.result()
            batch.clear()

        for i, (name, _, _) in enumerate(parsed):
            entry = self.tools.get(name) if isinstance(name, str) else None
            if entry is not None and entry.parallel_safe:
                batch.append(i)
                continue
            flush()
            results[i] = one(i)
        flush()
        return [r for r in results if r is not None]

    def close(self) -> None:
        for closer in reversed(self.closers):
            try:
                closer()
            except Exception:
                log.exception("error while closing")
        if self._bridge is not None:
            self._bridge.close()
        self.watchdog.stop()
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)


def _cancelled(name: str) -> CallOutcome:
    return _fail(
        name,
        "error",
        "cancelled",
        "Stopped: the user cancelled this call before it finished; it may have done part of its work.",
    )


def _split_call(call: Any) -> tuple[Any, Any, str | None]:
    if isinstance(call, Mapping):
        inner = call.get("function")
        fn: Mapping[str, Any] = inner if isinstance(inner, Mapping) else call
        return fn.get("name"), fn.get("arguments"), call.get("id")
    if isinstance(call, (tuple, list)) and len(call) in (2, 3):
        return call[0], call[1], call[2] if len(call) == 3 else None
    return None, None, None


def _render(value: Any) -> str:
    if value is None:
        return ""
    kind = type(value)
    if kind is int or kind is float:
        return json.dumps(value) if kind is float else str(value)
    if kind is bool:
        return "true" if value else "false"
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)
