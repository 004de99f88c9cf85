"""The call pipeline: name -> parse/coerce/validate -> pre hooks -> approval -> dispatch -> transform
-> sanitize -> limit -> post hooks. Every outcome is a ``CallOutcome`` whose ``result`` is what the model sees.

``run`` never raises: a malformed call, a blocking hook, a denial, a timeout or a crashing handler all
end as a result string the model can act on. Post hooks run last so that they observe the final,
redacted outcome (no secret ever reaches an observer plugin) with the duration of the whole call.
"""

from __future__ import annotations

import difflib
import itertools
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._trace import trace, trace_enabled
from ..context import ApprovalDenied, CallContext
from ..context import workspace_override as _workspace_override
from ..decisions import Block, CallOutcome, RequireApproval, Rewrite, Status, ToolOutput
from ..errors import ToolError
from ..registry import ToolEntry
from ..schema import ToolArgumentError
from ._results import limit_result, neutralise_markup
from ._watchdog import HandlerTimeout, Watchdog

if TYPE_CHECKING:
    import concurrent.futures as cf

    from ..system import Names, ToolSystem
    from ._shared_loop import SharedLoop

__all__ = ["Pipeline"]

log = logging.getLogger("hermes.pipeline")

_PRE_ARGS = ("name", "arguments", "entry", "context")
_POST_ARGS = (*_PRE_ARGS, "outcome")
_TRANSFORM_ARGS = (*_PRE_ARGS, "result")


class _Runtime:
    """What the pipeline compiles once per tool: argument processor, context opt-in, limits."""

    __slots__ = ("limit", "plain", "process", "timeout", "wants_context")

    def __init__(self, entry: ToolEntry, pipeline: Pipeline) -> None:
        from ..schema import compile_arguments

        cfg = pipeline.system.config
        self.process = compile_arguments(entry.parameters, max_length=cfg.max_argument_chars)
        self.wants_context = _accepts(entry.handler, "context")
        overrides = cfg.tool_limits(entry.name)
        self.limit: int = int(
            overrides.get("max_result_chars") or entry.max_result_size_chars or cfg.max_result_chars
        )
        timeout = overrides.get("timeout", entry.timeout if entry.timeout is not None else cfg.timeout)
        self.timeout: float | None = float(timeout) if timeout else None
        if self.timeout is not None:
            pipeline.watchdog.start()  # the inline path of run() arms deadlines without starting it
        # eligible for the inline path of Pipeline.run: a sync handler without a context parameter
        self.plain = not entry.is_async and not self.wants_context and entry.name not in pipeline._always_ask


def _accepts(fn: Callable[..., Any], param: str) -> bool:
    import inspect

    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    return param in sig.parameters


class _Impl:
    """A hook implementation with a caller that passes only the arguments it declares, positionally.

    ``call`` takes the hook's full argument list in spec order; building it once avoids a kwargs dict and a
    list per call on the hot path.
    """

    __slots__ = ("argnames", "call", "function", "plugin_name")

    def __init__(
        self, function: Callable[..., Any], argnames: Sequence[str], plugin_name: str, spec: Sequence[str]
    ) -> None:
        self.function = function
        self.argnames = tuple(argnames)
        self.plugin_name = plugin_name
        unknown = [a for a in self.argnames if a not in spec]
        if unknown:  # pluggy validates this at registration; keep the generated code honest anyway
            raise ValueError(f"hook implementation asks for unknown arguments {unknown}")
        namespace: dict[str, Any] = {"fn": function}
        exec(f"def call({', '.join(spec)}):\n    return fn({', '.join(self.argnames)})", namespace)
        self.call: Callable[..., Any] = namespace["call"]


def _new_id() -> str:
    return uuid.uuid4().hex[:12]


_CALL_PREFIX = uuid.uuid4().hex[:6] + "-"
_perf_counter = time.perf_counter
_monotonic = time.monotonic
_get_ident = threading.get_ident
_call_numbers = itertools.count(1)  # call ids: _CALL_PREFIX + a number, unique in the process


def _error_text(message: str, **extra: Any) -> str:
    return json.dumps({"error": message, **extra}, ensure_ascii=False)


class Pipeline:
    """Runs tool calls for one ``ToolSystem``."""

    def __init__(self, system: ToolSystem) -> None:
        self.system = system
        self._bridge: SharedLoop | None = None
        self.watchdog = Watchdog()
        self.closers: list[Callable[[], Any]] = []
        self._pre: tuple[_Impl, ...] = ()
        self._post: tuple[_Impl, ...] = ()
        self._transform: tuple[_Impl, ...] = ()
        self._hooks_want_context = False
        self._threads: cf.ThreadPoolExecutor | None = None
        self._redact: Callable[[str], str] | None = None
        self._guard: Any = None
        self.trace = trace_enabled()
        self._entries = system.registry._entries  # the registry's dict itself (mutated in place), for run()
        self._select = system._selection
        self._armed = self.watchdog.armed
        self._tokens = self.watchdog.tokens
        self._plain = not self.trace  # no hooks and no tracing: calls may take the inline path of run()
        tools = system.config.approvals.get("tools", ())
        # [approvals] tools: these tools need a human's approval for every call
        self._always_ask = frozenset([tools] if isinstance(tools, str) else tools)

    # -- setup -------------------------------------------------------------------------------------------

    def refresh_hooks(self) -> None:
        """Re-read the hook implementations (after plugins are added or removed)."""
        host = self.system.host
        hook = host.pm.hook

        def impls(caller: Any, spec: Sequence[str]) -> tuple[_Impl, ...]:
            # pluggy calls implementations from the end of this list (tryfirst last, trylast first)
            return tuple(
                _Impl(i.function, i.argnames, host.pm.get_name(i.plugin) or "?", spec)
                for i in reversed(caller.get_hookimpls())
            )

        self._pre = impls(hook.pre_tool_call, _PRE_ARGS)
        self._post = impls(hook.post_tool_call, _POST_ARGS)
        self._transform = impls(hook.transform_tool_result, _TRANSFORM_ARGS)
        self._hooks_want_context = any(
            "context" in i.argnames for i in (*self._pre, *self._post, *self._transform)
        )
        self._plain = not (self._pre or self._post or self._transform or self.trace)

    @property
    def bridge(self) -> SharedLoop:
        """The system's one event loop for async handlers (see ``_shared_loop``), made on first use."""
        bridge = self._bridge
        if bridge is None:
            from ._shared_loop import SharedLoop

            bridge = self._bridge = SharedLoop()
        return bridge

    @property
    def guard(self) -> Any:
        if self._guard is None:
            from ._guard import SecurityGuard

            self._guard = SecurityGuard(self.system)
        return self._guard

    # The pipeline is the Guard of its contexts; the security gate is built on first use.
    def guard_command(self, command: str, context: CallContext) -> Any:
        return self.guard.guard_command(command, context)

    def guard_path(self, path: Any, op: str, context: CallContext) -> Any:
        return self.guard.guard_path(path, op, context)

    def classify_command(self, command: str, workspace: Any) -> Any:
        return self.guard.classify_command(command, workspace)

    def request_approval(self, kind: str, subject: str, reason: str, context: CallContext) -> None:
        self.guard.request_approval(kind, subject, reason, context)

    def _load_redactor(self) -> Callable[[str], str]:
        from ..security import redact  # the security layer loads with the first result it must sanitise

        self._redact = redact
        return redact

    def _runtime(self, entry: ToolEntry) -> _Runtime:
        rt = entry._runtime = _Runtime(entry, self)
        return rt

    def _trace(self, hook: str, impl: _Impl, values: Sequence[Any], spec: Sequence[str], result: Any) -> None:
        args = {a: v for a, v in zip(spec, values, strict=True) if a in impl.argnames and a != "entry"}
        trace(f"{hook} {impl.plugin_name} args={args!r} -> {result!r}")

    # -- the stages --------------------------------------------------------------------------------------

    def _refuse_name(self, name: str, available: frozenset[str]) -> str:
        entry = self.system.registry.get(name) if isinstance(name, str) else None
        close = difflib.get_close_matches(str(name), sorted(available), n=3, cutoff=0.5)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        if entry is None:
            return f"Unknown tool {str(name)[:100]!r}.{hint}"
        hidden = self.system._selection(None, None, None).hidden.get(name)
        if hidden:
            return f"Tool {name!r} is not available right now ({hidden}).{hint}"
        return f"Tool {name!r} is not enabled for this conversation.{hint}"

    def _pre_hooks(
        self, name: str, args: dict[str, Any], entry: ToolEntry, ctx: CallContext | None, rt: _Runtime
    ) -> tuple[dict[str, Any], CallOutcome | None, list[RequireApproval]]:
        approvals: list[RequireApproval] = []
        for impl in self._pre:
            try:
                decision = impl.call(name, args, entry, ctx)
            except Exception:
                error_id = _new_id()
                log.exception(
                    "pre_tool_call hook of plugin %r failed (error id %s); blocking",
                    impl.plugin_name,
                    error_id,
                )
                return (
                    args,
                    self._fail(
                        name,
                        "blocked",
                        "hook_error",
                        f"Blocked: a policy check ({impl.plugin_name}) failed; the call was not run (error id {error_id}).",
                        error_id=error_id,
                    ),
                    approvals,
                )
            if self.trace:
                self._trace("pre_tool_call", impl, (name, args, entry, ctx), _PRE_ARGS, decision)
            if decision is None:
                continue
            if isinstance(decision, Block):
                return (
                    args,
                    self._fail(
                        name, "blocked", "blocked", f"Blocked by {impl.plugin_name}: {decision.reason}"
                    ),
                    approvals,
                )
            if isinstance(decision, Rewrite):
                try:
                    args = rt.process(decision.arguments)
                except ToolArgumentError as err:
                    log.error(
                        "plugin %r rewrote the arguments of %r into invalid ones: %s",
                        impl.plugin_name,
                        name,
                        err,
                    )
                    return (
                        args,
                        self._fail(
                            name,
                            "blocked",
                            "hook_error",
                            f"Blocked: a policy plugin ({impl.plugin_name}) produced invalid arguments; the call was not run.",
                        ),
                        approvals,
                    )
                continue
            if isinstance(decision, RequireApproval):
                approvals.append(decision)
                continue
            log.error(
                "pre_tool_call hook of plugin %r returned %r; blocking (fail closed)",
                impl.plugin_name,
                decision,
            )
            return (
                args,
                self._fail(
                    name,
                    "blocked",
                    "hook_error",
                    f"Blocked: a policy check ({impl.plugin_name}) gave an invalid answer.",
                ),
                approvals,
            )
        return args, None, approvals

    def _approve(
        self, name: str, args: dict[str, Any], ctx: CallContext, asks: list[RequireApproval]
    ) -> CallOutcome | None:
        reason = "; ".join(a.reason for a in asks)
        subject = next((a.subject for a in asks if a.subject), None)
        if subject is None:
            subject = f"{name} {json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)}"
        try:
            self.request_approval("tool", subject, reason, ctx)
        except ApprovalDenied as err:
            return self._fail(name, "denied", "approval", f"Denied: {err.message}")
        except Exception:  # an approval flow that breaks denies (fail closed)
            log.exception("approval flow failed for %r; denying", name)
            return self._fail(name, "denied", "approval", "Denied: the approval could not be obtained.")
        return None

    def _fail(
        self, name: str, status: Status, kind: str, message: str, error_id: str | None = None
    ) -> CallOutcome:
        extra = {"error_id": error_id} if error_id else {}
        return CallOutcome(
            name=name, status=status, result=_error_text(message, **extra), error_kind=kind, error_id=error_id
        )

    def _handler_failed(
        self, name: str, err: BaseException, rt: _Runtime | None, call_id: str
    ) -> CallOutcome:
        outcome = self._outcome_of_failure(name, err, rt)
        outcome.call_id = call_id
        return outcome

    def _outcome_of_failure(self, name: str, err: BaseException, rt: _Runtime | None) -> CallOutcome:
        if isinstance(err, ApprovalDenied):
            return self._fail(name, "denied", "approval", f"Denied: {err.message}")
        if isinstance(err, ToolError):
            return self._fail(name, "error", err.kind, err.message)
        if isinstance(err, (HandlerTimeout, TimeoutError)):
            seconds = rt.timeout if rt is not None else None
            return self._fail(
                name,
                "error",
                "timeout",
                f"The tool {name!r} timed out after {seconds:g} s and was stopped."
                if seconds
                else f"The tool {name!r} timed out.",
            )
        error_id = _new_id()
        log.error("tool %r raised %s (error id %s)", name, type(err).__name__, error_id, exc_info=err)
        return self._fail(
            name,
            "error",
            "exception",
            f"The tool {name!r} failed with an internal error (error id {error_id}); the details are in the log.",
            error_id=error_id,
        )

    def _finish(
        self,
        outcome: CallOutcome,
        entry: ToolEntry | None,
        args: dict[str, Any],
        ctx: CallContext | None,
        rt: _Runtime | None,
        started: float,
        value: Any = None,
    ) -> CallOutcome:
        """Transform, sanitize and limit the result, then let post hooks observe the outcome."""
        name = outcome.name
        if outcome.status == "ok":
            if type(value) is ToolOutput:  # text plus attachments (images, files) for the host
                outcome.attachments = value.attachments
                value = value.text
            text = value if type(value) is str else _render(value)
            if self._transform and entry is not None:
                for impl in self._transform:
                    try:
                        new = impl.call(name, args, entry, ctx, text)
                    except Exception:
                        log.exception(
                            "transform_tool_result hook of plugin %r failed; result left as it was",
                            impl.plugin_name,
                        )
                        continue
                    if self.trace:
                        self._trace(
                            "transform_tool_result",
                            impl,
                            (name, args, entry, ctx, text),
                            _TRANSFORM_ARGS,
                            new,
                        )
                    if isinstance(new, str):
                        text = new
            outcome.result = text
        text = (self._redact or self._load_redactor())(outcome.result)
        if "<" in text or "[" in text:
            text = neutralise_markup(text)
        limit = rt.limit if rt is not None else self.system.config.max_result_chars
        if len(text) > limit:
            text, saved = limit_result(text, limit, self.system.results_dir, outcome.call_id, name)
            outcome.truncated = True
            outcome.full_output_path = str(saved) if saved is not None else None
        outcome.result = text
        outcome.duration_ms = (time.perf_counter() - started) * 1000
        for impl in self._post:
            try:
                impl.call(name, args, entry, ctx, outcome)
            except Exception:
                log.exception("post_tool_call hook of plugin %r failed (ignored)", impl.plugin_name)
            if self.trace:
                self._trace("post_tool_call", impl, (name, args, entry, ctx, outcome), _POST_ARGS, None)
        return outcome

    # -- entry points ------------------------------------------------------------------------------------

    def _context(
        self, call_id: str, session_id: str | None, name: Any, available: frozenset[str]
    ) -> CallContext:
        system = self.system
        return CallContext(
            call_id=call_id,
            session_id=session_id or system.session_id,
            workspace=_workspace_override() or system.workspace,
            tool_name=str(name),
            system=system,
            ask_user=system.ask_user,
            guard=self,
            enabled=available,
        )

    def _prepare(
        self,
        name: str,
        raw: Any,
        enabled: Names,
        disabled: Names,
        session_id: str | None,
        call_id: str | None,
    ) -> tuple[
        CallOutcome | None,
        ToolEntry | None,
        _Runtime | None,
        dict[str, Any],
        CallContext | None,
        str,
    ]:
        """Stages before dispatch: an early outcome (refused, invalid, blocked, denied) or what dispatch needs,
        and the call id."""
        call_id = call_id or _CALL_PREFIX + str(next(_call_numbers))
        available = self._select(enabled, disabled, None).available
        entry = self._entries.get(name) if type(name) is str else None
        ctx = None
        if self._hooks_want_context:  # hooks see the context of every call, failed ones too
            ctx = self._context(call_id, session_id, name, available)
        if entry is None or name not in available:
            out = self._fail(str(name)[:200], "error", "unknown_tool", self._refuse_name(name, available))
            out.call_id = call_id
            return out, entry, None, {}, ctx, call_id
        rt = entry._runtime
        try:
            if rt is None:  # compiled on first call; a replaced tool is a new entry
                rt = self._runtime(entry)
            args = rt.process(raw)
        except ToolArgumentError as err:
            out = self._fail(name, "error", "invalid_arguments", str(err))
            out.call_id = call_id
            return out, entry, None, {}, ctx, call_id
        if ctx is None and rt.wants_context:
            ctx = self._context(call_id, session_id, name, available)
        asks: list[RequireApproval] = []
        if self._pre:
            args, early, asks = self._pre_hooks(name, args, entry, ctx, rt)
            if early is not None:
                early.call_id = call_id
                return early, entry, rt, args, ctx, call_id
        if name in self._always_ask:
            asks.append(RequireApproval(f"the configuration asks for approval of every {name!r} call"))
        if asks:
            if ctx is None:
                ctx = self._context(call_id, session_id, name, available)
            denied = self._approve(name, args, ctx, asks)
            if denied is not None:
                denied.call_id = call_id
                return denied, entry, rt, args, ctx, call_id
        return None, entry, rt, args, ctx, call_id

    def run(
        self,
        name: str,
        raw: Any,
        enabled: Names = None,
        disabled: Names = None,
        session_id: str | None = None,
        call_id: str | None = None,
    ) -> CallOutcome:
        """Run one call synchronously. Never raises.

        The common case (no hooks, a sync handler that takes no context, valid arguments, a result within its
        limit) runs inline below: the stages are the same as on the general path, only without the calls
        between them, which are most of the pipeline's cost at this size. Anything else leaves it early.
        """
        started = _perf_counter()
        if self._plain and type(name) is str:
            try:
                entry = self._entries.get(name)
                rt = entry._runtime if entry is not None else None
                if rt is not None and rt.plain and name in self._select(enabled, disabled, None).available:
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
                        failed = self._handler_failed(name, err, rt, call_id)
                        return self._finish(failed, entry, args, None, rt, started)
                    if type(value) is str:
                        text = value
                    elif type(value) is ToolOutput:  # attachments: the general result stage keeps them
                        ok = CallOutcome(name, "ok", "", call_id)
                        return self._finish(ok, entry, args, None, rt, started, value)
                    else:
                        text = _render(value)
                    text = (self._redact or self._load_redactor())(text)
                    if "<" in text or "[" in text:
                        text = neutralise_markup(text)
                    if len(text) <= rt.limit:
                        return CallOutcome(name, "ok", text, call_id, (_perf_counter() - started) * 1000)
                    return self._finish(
                        CallOutcome(name, "ok", "", call_id), entry, args, None, rt, started, text
                    )
            except (KeyboardInterrupt, SystemExit):
                raise
            except ToolArgumentError:
                pass  # the general path below parses again and reports the problem
            except BaseException:  # the last line of defence (a late HandlerTimeout included): never raise
                return self._internal_error(name)
        return self._run_general(name, raw, enabled, disabled, session_id, call_id, started)

    def _run_general(
        self,
        name: str,
        raw: Any,
        enabled: Names,
        disabled: Names,
        session_id: str | None,
        call_id: str | None,
        started: float,
    ) -> CallOutcome:
        try:
            early, entry, rt, args, ctx, call_id = self._prepare(
                name, raw, enabled, disabled, session_id, call_id
            )
            if early is not None:
                return self._finish(early, entry, args, ctx, rt, started)
            assert entry is not None and rt is not None
            call_args = {**args, "context": ctx} if rt.wants_context else args
            try:
                if entry.is_async:
                    value = self.bridge.run(entry.handler(**call_args), rt.timeout)
                else:
                    value = self._run_sync(entry, call_args, rt)
            except (Exception, HandlerTimeout) as err:
                return self._finish(
                    self._handler_failed(name, err, rt, call_id), entry, args, ctx, rt, started
                )
            return self._finish(CallOutcome(name, "ok", "", call_id), entry, args, ctx, rt, started, value)
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
    ) -> CallOutcome:
        """Run one call without blocking the caller's loop: async handlers on the system's loop, sync ones
        on a worker thread. Never raises (except cancellation of the awaiting task)."""
        import asyncio

        started = time.perf_counter()
        try:
            early, entry, rt, args, ctx, call_id = self._prepare(
                name, raw, enabled, disabled, session_id, call_id
            )
            if early is not None:
                return self._finish(early, entry, args, ctx, rt, started)
            assert entry is not None and rt is not None
            call_args = {**args, "context": ctx} if rt.wants_context else args
            try:
                if not entry.is_async:
                    loop = asyncio.get_running_loop()
                    value = await loop.run_in_executor(self._executor(), self._run_sync, entry, call_args, rt)
                elif self.bridge.in_loop_thread():
                    from ._bridge import _with_timeout

                    value = await _with_timeout(entry.handler(**call_args), rt.timeout)
                else:  # on the system's loop, driven from a worker thread so the caller's loop runs on
                    loop = asyncio.get_running_loop()
                    coro = entry.handler(**call_args)
                    value = await loop.run_in_executor(self._executor(), self.bridge.run, coro, rt.timeout)
            except (Exception, HandlerTimeout) as err:
                return self._finish(
                    self._handler_failed(name, err, rt, call_id), entry, args, ctx, rt, started
                )
            return self._finish(CallOutcome(name, "ok", "", call_id), entry, args, ctx, rt, started, value)
        except asyncio.CancelledError:
            raise
        except Exception:
            return self._internal_error(name)

    def _internal_error(self, name: Any) -> CallOutcome:
        error_id = _new_id()
        log.exception("internal error in the call pipeline for %r (error id %s)", name, error_id)
        message = f"Internal error while running the tool (error id {error_id})."
        return self._fail(str(name)[:200], "error", "exception", message, error_id=error_id)

    def _run_sync(self, entry: ToolEntry, args: dict[str, Any], rt: _Runtime) -> Any:
        """Call a sync handler on this thread, interrupted by the watchdog when its timeout passes."""
        if rt.timeout is None:
            return entry.handler(**args)
        armed = self._armed  # Watchdog.arm/disarm, inlined (this is on every call's path)
        token = next(self._tokens)
        armed[token] = (_monotonic() + rt.timeout, _get_ident())
        try:
            return entry.handler(**args)
        finally:
            if armed.pop(token, None) is None and self.watchdog.fired(token):
                raise HandlerTimeout

    def _executor(self) -> cf.ThreadPoolExecutor:
        if self._threads is None:
            import concurrent.futures as cf

            self._threads = cf.ThreadPoolExecutor(max_workers=16, thread_name_prefix="hermes-call")
        return self._threads

    # -- one model turn ----------------------------------------------------------------------------------

    def run_many(
        self, calls: list[Any], enabled: Names, disabled: Names, session_id: str | None
    ) -> list[CallOutcome]:
        """Consecutive parallel-safe calls run concurrently; any other call waits for them and runs alone."""
        parsed = [_split_call(c) for c in calls]
        results: list[CallOutcome | None] = [None] * len(parsed)
        batch: list[int] = []

        def flush() -> None:
            if not batch:
                return
            if len(batch) == 1:
                i = batch[0]
                results[i] = self.run(*parsed[i][:2], enabled, disabled, session_id, parsed[i][2])
            else:
                pool = self._executor()
                futures = {
                    i: pool.submit(
                        self.run, parsed[i][0], parsed[i][1], enabled, disabled, session_id, parsed[i][2]
                    )
                    for i in batch
                }
                for i, fut in futures.items():
                    results[i] = fut.result()
            batch.clear()

        registry = self.system.registry
        for i, (name, _, _) in enumerate(parsed):
            entry = registry.get(name) if isinstance(name, str) else None
            if entry is not None and entry.parallel_safe:
                batch.append(i)
                continue
            flush()
            results[i] = self.run(parsed[i][0], parsed[i][1], enabled, disabled, session_id, parsed[i][2])
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
