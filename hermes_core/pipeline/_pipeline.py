"""The call pipeline: name -> parse/coerce/validate -> pre hooks -> approval -> dispatch -> transform
-> sanitize -> limit -> post hooks. Every outcome is a ``CallOutcome`` whose ``result`` is what the model sees.

``run`` never raises: a malformed call, a blocking hook, a denial, a timeout or a crashing handler all
end as a result string the model can act on. Post hooks run last so that they observe the final,
redacted outcome (no secret ever reaches an observer plugin) with the duration of the whole call.

The pipeline is given what it needs by its tool system (``Pipeline.__init__``): a read-only view of the
registry, the selection function, the configuration, the hook runner, the security gate and a context
factory. A call's ``CallOutcome`` travels through the stages from the start: it begins ok and empty, a stage
that ends the call early fills in why, and ``_finish`` shapes the result.
"""

from __future__ import annotations

import contextvars
import functools
import itertools
import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .._aio.cancel import CallCancelled, CancelToken, cancellable, current_token, interrupt_on_cancel
from .._aio.watchdog import HandlerTimeout, Watchdog
from .._log import get_logger
from .._signatures import handler_shape
from ..context import ApprovalDenied, CallContext, Guard
from ..decisions import CallOutcome, RequireApproval, Status, ToolOutput
from ..errors import ToolError
from ..plugins._hooks import HookRunner, HookStop
from ..registry import ToolEntry
from ..schema._args_errors import ToolArgumentError
from ._results import limit_result, neutralise_markup

if TYPE_CHECKING:
    import concurrent.futures as cf

    from .._aio.shared_loop import SharedLoop
    from ..config import Config

__all__ = ["ContextFactory", "Pipeline", "Selection"]

log = get_logger("hermes.pipeline")

Names = Any  # Sequence[str] | str | None, as ``ToolSystem`` takes them


class Selection(Protocol):
    """What the selection function returns: the tools a caller may run now, why others are hidden, and the
    tools whose check is still running (``settle`` waits for one of them)."""

    @property
    def available(self) -> frozenset[str]: ...

    @property
    def hidden(self) -> dict[str, str]: ...

    @property
    def pending(self) -> frozenset[str]: ...

    @property
    def entries(self) -> Mapping[str, ToolEntry]: ...


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


def _argument_caps(entry: ToolEntry, overrides: Mapping[str, Any], cfg: Config) -> dict[str, int]:
    """How big a call's arguments may be: ``[limits.tools.<name>] max_argument_chars``, else the tool's own
    ``max_argument_chars``, caps the JSON and each string in it; else the config's ``[limits]
    max_argument_chars`` caps the JSON (and the schema layer's default each string)."""
    own = overrides.get("max_argument_chars") or entry.max_argument_chars
    if not own:
        return {"max_length": cfg.max_argument_chars}
    return {"max_length": int(own), "max_string": int(own)}


class _Runtime:
    """What the pipeline compiles once per tool: argument processor, calling style, limits."""

    __slots__ = ("always_ask", "dict_style", "keywords_only", "limit", "process", "timeout", "wants_context")

    def __init__(self, entry: ToolEntry, pipeline: Pipeline) -> None:
        from ..schema import compile_arguments

        cfg = pipeline.config
        overrides = cfg.tool_limits(entry.name)
        self.process = compile_arguments(entry.parameters, **_argument_caps(entry, overrides, cfg))
        shape = handler_shape(entry.handler, entry.parameters, entry.handler_style)
        self.dict_style = shape.style == "dict"
        self.wants_context = shape.wants_context
        self.keywords_only = not self.dict_style and not self.wants_context  # handler(**arguments)
        self.limit: int = int(
            overrides.get("max_result_chars") or entry.max_result_size_chars or cfg.max_result_chars
        )
        timeout = overrides.get("timeout", entry.timeout if entry.timeout is not None else cfg.timeout)
        self.timeout: float | None = float(timeout) if timeout else None
        if self.timeout is not None:
            pipeline.watchdog.start()  # _run_sync arms deadlines without starting it
        self.always_ask = entry.name in pipeline.always_ask  # [approvals] tools: a human approves every call

    def invoke(self, handler: Callable[..., Any], args: dict[str, Any], ctx: CallContext | None) -> Any:
        """Call ``handler`` in its style (for an async handler: make its coroutine)."""
        if self.dict_style:
            return handler(args, context=ctx) if self.wants_context else handler(args)
        return handler(**args, context=ctx) if self.wants_context else handler(**args)


Admitted = tuple[ToolEntry | None, "_Runtime | None", dict[str, Any], CallContext | None]
"""What the stages before dispatch leave for it: ``(entry, runtime, arguments, context)`` (None where a call
ended before that was known)."""


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


_CANCELLED = "Stopped: the user cancelled this call before it finished; it may have done part of its work."


def _end(outcome: CallOutcome, status: Status, kind: str, message: str, error_id: str | None = None) -> None:
    """Fill in how a call ended when it did not end with its handler's result."""
    extra = {"error_id": error_id} if error_id else {}
    outcome.status = status
    outcome.result = _error_text(message, **extra)
    outcome.error_kind = kind
    outcome.error_id = error_id


class Pipeline:
    """Runs tool calls for one tool system.

    ``tools`` is a live read-only view of the registry; ``select(enabled, disabled, disabled_tools)`` the
    selection, which never waits for a check, and ``settle(name, enabled, disabled, disabled_tools)`` the
    selection once the called tool's own running check has answered; ``hooks`` the plugin host's hook runner; ``guard`` the security gate (built on first use);
    ``new_context`` makes each call's ``CallContext``; over-long results are saved under ``results_dir``.
    """

    def __init__(
        self,
        *,
        tools: Mapping[str, ToolEntry],
        select: Callable[[Names, Names, Names], Selection],
        settle: Callable[[str, Names, Names, Names], Selection],
        config: Config,
        hooks: HookRunner,
        guard: Guard,
        new_context: ContextFactory,
        results_dir: Path,
    ) -> None:
        self.tools = tools
        self.select = select
        self.settle = settle
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

    def _refuse_name(self, name: Any, sel: Selection) -> str:
        entry = self.tools.get(name) if isinstance(name, str) else None
        import difflib

        close = difflib.get_close_matches(str(name), sorted(sel.available), n=3, cutoff=0.5)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        if entry is None:
            return f"Unknown tool {str(name)[:100]!r}.{hint}"
        hidden = sel.hidden.get(name)  # outside the call's own selection: "not enabled", whatever its check
        if hidden:
            return f"Tool {name!r} is not available right now ({hidden}).{hint}"
        return f"Tool {name!r} is not enabled for this conversation.{hint}"

    def _approve(
        self, outcome: CallOutcome, args: dict[str, Any], ctx: CallContext, asks: list[RequireApproval]
    ) -> None:
        name = outcome.name
        reason = "; ".join(a.reason for a in asks)
        subject = next((a.subject for a in asks if a.subject), None)
        if subject is None:
            subject = f"{name} {json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)}"
        try:
            self.guard.request_approval("tool", subject, reason, ctx)
        except ApprovalDenied as err:
            _end(outcome, "denied", "approval", f"Denied: {err.message}")
        except Exception:  # an approval flow that breaks denies (fail closed)
            log.exception("approval flow failed for %r; denying", name)
            _end(outcome, "denied", "approval", "Denied: the approval could not be obtained.")

    @staticmethod
    def _failed(outcome: CallOutcome, err: BaseException, rt: _Runtime | None) -> None:
        """Fill in how the handler failed: a denial, a deliberate ``ToolError``, a timeout or a bug."""
        name = outcome.name
        if isinstance(err, ApprovalDenied):
            _end(outcome, "denied", "approval", f"Denied: {err.message}")
        elif isinstance(err, CallCancelled):
            _end(outcome, "error", "cancelled", _CANCELLED)
        elif isinstance(err, ToolError):
            _end(outcome, "error", err.kind, err.message)
        elif isinstance(err, (HandlerTimeout, TimeoutError)):
            seconds = rt.timeout if rt is not None else None
            _end(
                outcome,
                "error",
                "timeout",
                f"The tool {name!r} timed out after {seconds:g} s and was stopped."
                if seconds
                else f"The tool {name!r} timed out.",
            )
        else:
            error_id = _new_id()
            log.error("tool %r raised %s (error id %s)", name, type(err).__name__, error_id, exc_info=err)
            _end(
                outcome,
                "error",
                "exception",
                f"The tool {name!r} failed with an internal error (error id {error_id}); the details are in "
                "the log.",
                error_id,
            )

    def _finish(self, outcome: CallOutcome, started: float, admitted: Admitted, value: Any) -> CallOutcome:
        """Render the handler's ``value`` (for a call still ok), transform, sanitize and limit the result, then
        let post hooks observe the outcome."""
        entry, rt, args, ctx = admitted
        if outcome.status == "ok":
            kind = type(value)
            if kind is ToolOutput:  # text plus attachments (images, files) for the host
                outcome.attachments, value = value.attachments, value.text
                kind = type(value)
            text = value if kind is str else str(value) if kind is int else _render(value)
            if self._transform and entry is not None:
                text = self._run_transform(outcome.name, args, entry, ctx, text)
        else:
            text = outcome.result
        text = (self._redact or self._load_redactor())(text)
        if "<" in text or "[" in text:
            text = neutralise_markup(text)
        limit = rt.limit if rt is not None else self.config.max_result_chars
        if len(text) > limit:
            text, saved = limit_result(text, limit, self.results_dir, outcome.call_id, outcome.name)
            outcome.truncated = True
            outcome.full_output_path = str(saved) if saved is not None else None
        outcome.result = text
        outcome.duration_ms = (_perf_counter() - started) * 1000
        if self._post:
            self._run_post(outcome.name, args, entry, ctx, outcome)
        return outcome

    # -- entry points ------------------------------------------------------------------------------------

    def _admit(
        self,
        outcome: CallOutcome,
        raw: Any,
        enabled: Names,
        disabled: Names,
        session_id: str | None,
        approver: Any,
        ask_user: Any,
    ) -> Admitted:
        """The stages before dispatch: the tool and the selection, the arguments, the policy hooks and the
        approvals. Returns what dispatch needs; a call these stages end (refused, invalid, blocked, denied) has
        its ``outcome`` filled in with why."""
        name = outcome.name
        sel = self.select(enabled, disabled, None)
        if sel.pending and name in sel.pending:  # its check is running: wait for that one, never for others
            sel = self.settle(name, enabled, disabled, None)
        entry = sel.entries.get(name) if type(name) is str else None
        ctx = None
        if self._hooks_want_context:  # hooks see the context of every call, failed ones too
            ctx = self._new_context(outcome.call_id, session_id, str(name), sel.available, approver, ask_user)
        if entry is None:  # unknown, hidden by its check or not selected
            outcome.name = str(name)[:200]
            _end(outcome, "error", "unknown_tool", self._refuse_name(name, sel))
            return (self.tools.get(name) if type(name) is str else None), None, {}, ctx
        rt = entry._runtime
        try:
            if rt is None:  # compiled on first call; a replaced tool is a new entry
                rt = self._runtime(entry)
            args = rt.process(raw)
        except ToolArgumentError as err:
            _end(outcome, "error", "invalid_arguments", str(err))
            return entry, rt, {}, ctx
        if rt.wants_context and ctx is None:
            ctx = self._new_context(outcome.call_id, session_id, name, sel.available, approver, ask_user)
        if not (self._pre or rt.always_ask):
            return entry, rt, args, ctx
        asks: list[RequireApproval] | None = None
        if self._pre:
            try:
                args, asks = self._run_pre(name, args, entry, ctx, rt.process)
            except HookStop as stop:
                _end(outcome, "blocked", stop.kind, stop.message, stop.error_id)
                return entry, rt, args, ctx
        if rt.always_ask:
            asks = [
                *(asks or ()),
                RequireApproval(f"the configuration asks for approval of every {name!r} call"),
            ]
        if asks:
            if ctx is None:
                ctx = self._new_context(outcome.call_id, session_id, name, sel.available, approver, ask_user)
            self._approve(outcome, args, ctx, asks)
        return entry, rt, args, ctx

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

        The outcome starts ok and empty; a stage that ends the call fills in why, and ``_finish`` the rest.
        """
        started = _perf_counter()
        outcome = CallOutcome(name, "ok", "", call_id or _CALL_PREFIX + str(next(_call_numbers)))
        try:
            admitted = self._admit(outcome, raw, enabled, disabled, session_id, approver, ask_user)
            value = None
            if outcome.status == "ok":
                entry, rt, args, ctx = admitted
                assert entry is not None and rt is not None  # admitted: the tool and its runtime are known
                scope = current_token()
                try:
                    if scope is not None:
                        value = self._run_under(scope, entry, args, ctx, rt)
                    elif entry.is_async:
                        value = self.bridge.run(rt.invoke(entry.handler, args, ctx), rt.timeout)
                    else:
                        value = self._run_sync(entry, args, ctx, rt)
                except (Exception, HandlerTimeout, CallCancelled) as err:
                    self._failed(outcome, err, rt)
            return self._finish(outcome, started, admitted, value)
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

        started = _perf_counter()
        outcome = CallOutcome(name, "ok", "", call_id or _new_call_id())
        try:
            admitted = self._admit(outcome, raw, enabled, disabled, session_id, approver, ask_user)
            value = None
            if outcome.status == "ok":
                entry, rt, args, ctx = admitted
                assert entry is not None and rt is not None
                token = current_token()
                try:
                    loop = asyncio.get_running_loop()
                    if (
                        not entry.is_async
                    ):  # on a worker thread (with this task's context), so the loop runs on
                        work = self._run_sync if token is None else functools.partial(self._run_under, token)
                        value = await loop.run_in_executor(
                            self._executor(), contextvars.copy_context().run, work, entry, args, ctx, rt
                        )
                    elif self.bridge.claim(loop):  # native: right here, in the awaiting task
                        coro = rt.invoke(entry.handler, args, ctx)
                        if token is not None:
                            coro = cancellable(coro, token)
                        value = (
                            await coro if rt.timeout is None else await self._timed(coro, rt.timeout, loop)
                        )
                    else:  # the system's loop is another one: hand over without blocking this loop
                        coro = rt.invoke(entry.handler, args, ctx)
                        if token is not None:
                            coro = cancellable(coro, token)
                        value = await self.bridge.run_elsewhere(coro, rt.timeout, self._executor())
                except (Exception, HandlerTimeout, CallCancelled) as err:
                    self._failed(outcome, err, rt)
            return self._finish(outcome, started, admitted, value)
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
        outcome = CallOutcome(str(name)[:200], "error", "")
        _end(
            outcome,
            "error",
            "exception",
            f"Internal error while running the tool (error id {error_id}).",
            error_id,
        )
        return outcome

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
