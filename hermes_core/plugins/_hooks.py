"""The one hook runner: every hook of the ``hermes`` project is called here, with its fault policy.

Order is pluggy's (``tryfirst``/``trylast``, then last registered first). Hook wrappers (``@hookimpl(
wrapper=True)`` and the older ``hookwrapper=True``) are run by pluggy itself (``HookCaller.call_extra``): they
wrap all the plain implementations of a call, receive their results as pluggy gives them (the list of the
non-None answers, in call order) and may change them or raise. ``firstresult`` hook specs stop at the first
answer that is not None. Plain implementations run one at a time, each isolated, so one plugin's exception
never skips another's hook; what an exception means is decided here, per hook:

- ``pre_tool_call``: it blocks the call (fails closed), as does a wrapper that raises or an answer that is not
  None, ``Block``, ``Rewrite`` or ``RequireApproval``. A ``Rewrite`` is validated again and the next plugin
  sees the new arguments; the first ``Block`` ends the stage.
- ``post_tool_call``: logged; the outcome is unchanged and later observers still run.
- ``transform_tool_result``: logged; the text stays as the previous plugin left it. Later plugins see earlier
  rewrites.
- ``register_tools``, ``register_toolsets``, ``register_commands``, ``register_environments``: called per plugin
  through ``each``, which
  hands the failure back to the caller (the plugin host rolls the plugin back and records it). These hooks
  change shared state once per plugin, so wrappers for them are refused at registration (``refusals``).

Each implementation is called with the arguments it declares, taken by position from the hook's argument tuple
by a small caller made once per implementation (``_caller``), which keeps the per-call cost small.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from operator import itemgetter
from typing import Any

import pluggy

from .._log import get_logger
from .._trace import trace, trace_enabled
from ..decisions import Block, RequireApproval, Rewrite

__all__ = ["ONCE_PER_PLUGIN", "Each", "HookRunner", "HookStop", "Impl", "refusals"]

log = get_logger("hermes.plugins")

PRE_ARGS = ("name", "arguments", "entry", "context")
POST_ARGS = (*PRE_ARGS, "outcome")
TRANSFORM_ARGS = (*PRE_ARGS, "result")
ONCE_PER_PLUGIN = frozenset(
    {"register_tools", "register_toolsets", "register_commands", "register_environments"}
)


def _new_id() -> str:
    return os.urandom(6).hex()


class HookStop(Exception):
    """``pre_tool_call`` ended the call: ``status`` blocked, ``kind`` blocked or hook_error, the model's message."""

    def __init__(self, kind: str, message: str, error_id: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.error_id = error_id


def _caller(function: Callable[..., Any], positions: tuple[int, ...]) -> Callable[[tuple[Any, ...]], Any]:
    """``caller(values)`` calls ``function`` with ``values[i]`` for each of ``positions``, as plain arguments
    (a star-call costs twice as much as this, per implementation and call)."""
    if len(positions) == 0:
        return lambda v: function()
    if len(positions) == 1:
        (a,) = positions
        return lambda v: function(v[a])
    if len(positions) == 2:
        a, b = positions
        return lambda v: function(v[a], v[b])
    if len(positions) == 3:
        a, b, c = positions
        return lambda v: function(v[a], v[b], v[c])
    if len(positions) == 4:
        a, b, c, d = positions
        return lambda v: function(v[a], v[b], v[c], v[d])
    if len(positions) == 5:
        a, b, c, d, e = positions
        return lambda v: function(v[a], v[b], v[c], v[d], v[e])
    pick = itemgetter(*positions)
    return lambda v: function(*pick(v))


class Impl:
    """A plain hook implementation: ``run(values)`` calls it with the arguments it declares, taken from the
    hook's full argument tuple (in spec order)."""

    __slots__ = ("argnames", "function", "plugin", "plugin_name", "run")

    def __init__(self, impl: pluggy.HookImpl, spec: Sequence[str]) -> None:
        self.function = impl.function
        self.plugin = impl.plugin
        self.plugin_name = impl.plugin_name
        self.argnames = tuple(impl.argnames)
        unknown = [a for a in self.argnames if a not in spec]
        if unknown:  # pluggy validates this at registration; a caller must never guess
            raise ValueError(f"hook implementation asks for unknown arguments {unknown}")
        self.run = _caller(impl.function, tuple(spec.index(a) for a in self.argnames))

    def call(self, *values: Any) -> Any:
        """Call the implementation with the hook's full argument list, in spec order."""
        return self.run(values)


class _Hook:
    """One hook, compiled: its plain implementations in call order, and pluggy's caller for its wrappers."""

    __slots__ = ("impls", "name", "spec", "wrapped")

    def __init__(self, name: str, impls: tuple[Impl, ...], spec: Sequence[str], wrapped: Any) -> None:
        self.name = name
        self.impls = impls
        self.spec = tuple(spec)
        self.wrapped = wrapped  # a pluggy HookCaller holding only the wrappers, or None

    def __bool__(self) -> bool:
        return bool(self.impls) or self.wrapped is not None


_EMPTY = _Hook("", (), (), None)


def _spec_args(caller: Any) -> tuple[str, ...]:
    spec = caller.spec
    return tuple(spec.argnames) if spec is not None else ()


def _is_wrapper(impl: pluggy.HookImpl) -> bool:
    return bool(impl.wrapper or impl.hookwrapper)


def refusals(pm: pluggy.PluginManager, plugin: object) -> list[str]:
    """What this runner cannot honour in ``plugin``'s hook implementations, as messages (empty: all fine)."""
    out: list[str] = []
    for caller in pm.get_hookcallers(plugin) or []:
        mine = [i for i in caller.get_hookimpls() if i.plugin is plugin]
        wrappers = [i for i in mine if _is_wrapper(i)]
        if not wrappers:
            continue
        if caller.name in ONCE_PER_PLUGIN:
            out.append(
                f"{caller.name} cannot be a hook wrapper: it runs once per plugin, and a plugin whose "
                f"{caller.name} fails is rolled back on its own; make {wrappers[0].function.__name__} a plain "
                "@hookimpl"
            )
        elif len(wrappers) != len(mine):
            out.append(f"{caller.name} is implemented both as a hook wrapper and as a plain hook; keep one")
    return out


class Each:
    """The result of one plugin's implementation run by ``HookRunner.each``."""

    __slots__ = ("error", "plugin", "plugin_name", "value")

    def __init__(self, plugin: object, plugin_name: str, value: Any, error: Exception | None) -> None:
        self.plugin = plugin
        self.plugin_name = plugin_name
        self.value = value
        self.error = error


class HookRunner:
    """Calls the hooks of one plugin manager (see the module docstring for each hook's fault policy)."""

    run_pre: Callable[..., tuple[dict[str, Any], list[RequireApproval] | None]]
    """``run_pre(name, arguments, entry, context, revalidate) -> (arguments, approvals or None)``: the arguments
    to run with and the approvals asked for, in call order; raises ``HookStop`` to end the call (a ``Block``, a
    hook that raised, an invalid answer)."""
    run_post: Callable[..., None]
    """``run_post(name, arguments, entry, context, outcome)``: every observer sees the outcome; one that raises
    is logged."""
    run_transform: Callable[..., str]
    """``run_transform(name, arguments, entry, context, text) -> text``: each plugin may rewrite the text the
    previous one left."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        self.trace = trace_enabled()
        # hook name -> (its implementations, spec, plain callers, has wrappers) for ``call``
        self._generic: dict[str, tuple[list[Any], tuple[str, ...], list[Impl], bool]] = {}
        self.pre = self.post = self.transform = _EMPTY
        self.wants_context = False
        self.refresh()

    # -- compilation -------------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Re-read the implementations of the call hooks (after plugins are added or removed)."""
        self.pre = self._compile("pre_tool_call", PRE_ARGS)
        self.post = self._compile("post_tool_call", POST_ARGS)
        self.transform = self._compile("transform_tool_result", TRANSFORM_ARGS)
        # with wrappers, pluggy runs the stage; without, a loop over (caller, implementation)
        self._pre_calls = tuple((i.run, i) for i in self.pre.impls)
        self._post_calls = tuple((i.run, i) for i in self.post.impls)
        self.run_pre = self._pre_loop if self.pre.wrapped is None else self._pre_wrapped
        self.run_post = self._post_loop if self.post.wrapped is None else self._post_wrapped
        self.run_transform = self._transform
        self.wants_context = any(
            "context" in i.argnames for hook in (self.pre, self.post, self.transform) for i in hook.impls
        ) or any(hook.wrapped is not None for hook in (self.pre, self.post, self.transform))

    @property
    def active(self) -> bool:
        """True when any call hook has an implementation (or tracing is on)."""
        return bool(self.pre or self.post or self.transform) or self.trace

    def _compile(self, name: str, spec: Sequence[str]) -> _Hook:
        caller = getattr(self.pm.hook, name)
        impls = caller.get_hookimpls()
        plain = tuple(Impl(i, spec) for i in reversed(impls) if not _is_wrapper(i))
        wrapped = None
        if any(_is_wrapper(i) for i in impls):
            wrapped = self.pm.subset_hook_caller(name, {i.plugin for i in impls if not _is_wrapper(i)})
        return _Hook(name, plain, spec, wrapped)

    def _trace(self, hook: str, impl: Impl, values: Sequence[Any], spec: Sequence[str], result: Any) -> None:
        args = {a: v for a, v in zip(spec, values, strict=True) if a in impl.argnames and a != "entry"}
        trace(f"{hook} {impl.plugin_name} args={args!r} -> {result!r}")

    # -- pre_tool_call -----------------------------------------------------------------------------------

    def _pre_loop(
        self,
        name: str,
        args: dict[str, Any],
        entry: Any,
        context: Any,
        revalidate: Callable[[Any], dict[str, Any]],
    ) -> tuple[dict[str, Any], list[RequireApproval] | None]:
        """``run_pre`` without wrappers: each implementation in call order, until one ends the stage."""
        approvals: list[RequireApproval] | None = None
        values = (name, args, entry, context)
        trace = self.trace
        for run, impl in self._pre_calls:
            try:
                decision = run(values)
            except Exception:
                raise self._pre_failed(impl.plugin_name) from None
            if trace:
                self._trace("pre_tool_call", impl, values, PRE_ARGS, decision)
            if decision is None:
                continue
            if isinstance(decision, Rewrite):
                args = self._rewrite(name, impl.plugin_name, decision, revalidate)
                values = (name, args, entry, context)
            elif isinstance(decision, RequireApproval):
                approvals = [*(approvals or ()), decision]
            else:
                raise self._pre_verdict(name, impl.plugin_name, decision)
        return args, approvals

    @staticmethod
    def _pre_failed(plugin: str) -> HookStop:
        error_id = _new_id()
        log.exception("pre_tool_call hook of plugin %r failed (error id %s); blocking", plugin, error_id)
        return HookStop(
            "hook_error",
            f"Blocked: a policy check ({plugin}) failed; the call was not run (error id {error_id}).",
            error_id,
        )

    @staticmethod
    def _pre_verdict(name: str, plugin: str, decision: object) -> HookStop:
        if isinstance(decision, Block):
            return HookStop("blocked", f"Blocked by {plugin}: {decision.reason}")
        log.error("pre_tool_call hook of plugin %r returned %r; blocking (fail closed)", plugin, decision)
        return HookStop("hook_error", f"Blocked: a policy check ({plugin}) gave an invalid answer.")

    @staticmethod
    def _rewrite(
        name: str, plugin: str, decision: Rewrite, revalidate: Callable[[Any], dict[str, Any]]
    ) -> dict[str, Any]:
        from ..schema import ToolArgumentError

        try:
            return revalidate(decision.arguments)
        except ToolArgumentError as err:
            log.error("plugin %r rewrote the arguments of %r into invalid ones: %s", plugin, name, err)
            raise HookStop(
                "hook_error",
                f"Blocked: a policy plugin ({plugin}) produced invalid arguments; the call was not run.",
            ) from None

    def _pre_wrapped(
        self,
        name: str,
        args: dict[str, Any],
        entry: Any,
        context: Any,
        revalidate: Callable[[Any], dict[str, Any]],
    ) -> tuple[dict[str, Any], list[RequireApproval] | None]:
        """``run_pre`` inside the wrappers: they see (and may change) the list of decisions, in call order."""
        current = [args]
        authors: dict[int, str] = {}  # id(decision) -> plugin that answered it
        validated: dict[int, dict[str, Any]] = {}  # id(Rewrite) -> its validated arguments
        stops: dict[int, HookStop] = {}  # id(Block) -> the stop it stands for (a failure, an invalid answer)

        def shim(impl: Impl) -> Callable[[], Any]:
            def run() -> Any:
                if stops:
                    return None  # an earlier plugin ended the stage: the rest are not asked
                try:
                    decision = impl.call(name, current[0], entry, context)
                except Exception:
                    stop = self._pre_failed(impl.plugin_name)
                else:
                    if self.trace:
                        values = (name, current[0], entry, context)
                        self._trace("pre_tool_call", impl, values, PRE_ARGS, decision)
                    if decision is None or isinstance(decision, RequireApproval):
                        return decision
                    authors[id(decision)] = impl.plugin_name
                    if not isinstance(decision, Rewrite):
                        stop = self._pre_verdict(name, impl.plugin_name, decision)
                        if isinstance(decision, Block):
                            stops[id(decision)] = stop
                            return decision
                    else:
                        try:
                            current[0] = validated[id(decision)] = self._rewrite(
                                name, impl.plugin_name, decision, revalidate
                            )
                            return decision
                        except HookStop as err:
                            stop = err
                marker = Block(stop.message)
                stops[id(marker)] = stop
                return marker

            return run

        answers = self._call_wrapped(
            self.pre, [shim(i) for i in reversed(self.pre.impls)], (name, args, entry, context)
        )
        if isinstance(answers, HookStop):
            raise answers
        if not isinstance(answers, list):
            log.error("a pre_tool_call hook wrapper returned %r instead of a list; blocking", answers)
            raise HookStop("hook_error", "Blocked: a policy hook wrapper gave an invalid answer.")
        result = args
        approvals: list[RequireApproval] | None = None
        for decision in answers:  # what the wrappers left, in call order
            plugin = authors.get(id(decision), "a hook wrapper")
            if isinstance(decision, Rewrite):
                known = validated.get(id(decision))
                result = known if known is not None else self._rewrite(name, plugin, decision, revalidate)
            elif isinstance(decision, RequireApproval):
                approvals = [*(approvals or ()), decision]
            else:
                raise stops.get(id(decision)) or self._pre_verdict(name, plugin, decision)
        return result, approvals

    # -- post_tool_call and transform_tool_result --------------------------------------------------------

    def _post_loop(self, name: str, args: dict[str, Any], entry: Any, context: Any, outcome: Any) -> None:
        """``run_post`` without wrappers: every observer in turn, one that raises logged."""
        values = (name, args, entry, context, outcome)
        trace = self.trace
        for run, impl in self._post_calls:
            try:
                run(values)
            except Exception:
                _post_failed(impl.plugin_name)
            if trace:
                self._trace("post_tool_call", impl, values, POST_ARGS, None)

    def _post_wrapped(self, name: str, args: dict[str, Any], entry: Any, context: Any, outcome: Any) -> None:
        """``run_post`` inside the wrappers (pluggy runs them around the isolated observers)."""
        values = (name, args, entry, context, outcome)
        shims = [self._observer(i, values) for i in reversed(self.post.impls)]
        failure = self._call_wrapped(self.post, shims, values)
        if isinstance(failure, HookStop):
            log.error("post_tool_call: %s (ignored)", failure.message)

    def _observer(self, impl: Impl, values: Sequence[Any]) -> Callable[[], Any]:
        def run() -> Any:
            try:
                result = impl.call(*values)
            except Exception:
                log.exception("post_tool_call hook of plugin %r failed (ignored)", impl.plugin_name)
                return None
            if self.trace:
                self._trace("post_tool_call", impl, values, POST_ARGS, result)
            return result

        return run

    def _transform(self, name: str, args: dict[str, Any], entry: Any, context: Any, text: str) -> str:
        """``run_transform``: inside the wrappers when there are any."""
        hook = self.transform
        if hook.wrapped is not None:
            box = [text]

            def shim(impl: Impl) -> Callable[[], Any]:
                def run() -> Any:
                    new = self._transform_one(impl, name, args, entry, context, box[0])
                    if isinstance(new, str):
                        box[0] = new
                        return new
                    return None

                return run

            answers = self._call_wrapped(
                hook, [shim(i) for i in reversed(hook.impls)], (name, args, entry, context, text)
            )
            if isinstance(answers, HookStop):
                log.error("transform_tool_result: %s; result left as it was", answers.message)
                return text
            for answer in answers if isinstance(answers, list) else ():
                if isinstance(answer, str):
                    text = answer
            return text
        for impl in hook.impls:
            new = self._transform_one(impl, name, args, entry, context, text)
            if isinstance(new, str):
                text = new
        return text

    def _transform_one(self, impl: Impl, name: str, args: Any, entry: Any, context: Any, text: str) -> Any:
        try:
            new = impl.run((name, args, entry, context, text))
        except Exception:
            return _transform_failed(impl.plugin_name)
        if self.trace:
            self._trace(
                "transform_tool_result", impl, (name, args, entry, context, text), TRANSFORM_ARGS, new
            )
        return new

    # -- wrappers ----------------------------------------------------------------------------------------

    def _call_wrapped(self, hook: _Hook, shims: list[Callable[[], Any]], values: Sequence[Any]) -> Any:
        """Run ``shims`` (the plain implementations, isolated) inside the hook's wrappers, through pluggy.

        pluggy calls extra methods last-given-first, so ``shims`` come in reverse call order. Returns what the
        wrappers made of the answers, or a ``HookStop`` naming the wrapper that raised.
        """
        try:
            return hook.wrapped.call_extra(shims, dict(zip(hook.spec, values, strict=True)))
        except Exception as err:
            plugin = self._wrapper_of(hook, err)
            error_id = _new_id()
            log.error(
                "%s hook wrapper of plugin %r failed (error id %s)", hook.name, plugin, error_id, exc_info=err
            )
            return HookStop(
                "hook_error",
                f"Blocked: a policy check ({plugin}) failed; the call was not run (error id {error_id}).",
                error_id,
            )

    @staticmethod
    def _wrapper_of(hook: _Hook, err: BaseException) -> str:
        """The plugin whose wrapper raised ``err``: the innermost wrapper frame in its traceback."""
        codes = {getattr(i.function, "__code__", None): i.plugin_name for i in hook.wrapped.get_hookimpls()}
        found = "a hook wrapper"
        tb = err.__traceback__
        while tb is not None:
            found = codes.get(tb.tb_frame.f_code, found)
            tb = tb.tb_next
        return found

    # -- hooks run once per plugin -----------------------------------------------------------------------

    def each(
        self,
        hook: str,
        kwargs: Mapping[str, Any],
        *,
        only: object = None,
        around: Callable[[str], AbstractContextManager[Any]] | None = None,
        order: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
        want: Callable[[str], bool] | None = None,
    ) -> Iterator[Each]:
        """Run ``hook``'s implementations one plugin at a time (or only ``only``'s), each inside
        ``around(plugin_name)``; yields each one's answer or exception (an ``Exception`` never propagates).

        ``order`` re-sorts the implementations (pluggy's call order by default); ``want(plugin_name)`` is asked
        just before each one runs and skips it when False. A generator: the caller acts on a plugin's result
        (a rollback, a record) before the next plugin runs.
        """
        caller = getattr(self.pm.hook, hook)
        impls: Iterable[Any] = reversed(caller.get_hookimpls())
        if order is not None:
            impls = order(impls)
        for impl in impls:
            if _is_wrapper(impl) or (only is not None and impl.plugin is not only):
                continue
            plugin_name = self.pm.get_name(impl.plugin) or impl.plugin_name
            if want is not None and not want(plugin_name):
                continue
            args = {a: kwargs[a] for a in impl.argnames}
            try:
                if around is None:
                    value = impl.function(**args)
                else:
                    with around(plugin_name):
                        value = impl.function(**args)
            except Exception as err:
                if self.trace:
                    trace(f"{hook} {plugin_name} args={_short(args)} -> raised {err!r}")
                yield Each(impl.plugin, plugin_name, None, err)
                continue
            if self.trace:
                trace(f"{hook} {plugin_name} args={_short(args)} -> {value!r}")
            yield Each(impl.plugin, plugin_name, value, None)

    def call(self, hook: str, **kwargs: Any) -> Any:
        """Call any hook the generic way: every implementation isolated (a failing one is logged and skipped),
        wrappers run by pluggy, ``firstresult`` honoured. Returns what pluggy returns."""
        caller = getattr(self.pm.hook, hook)
        impls = caller.get_hookimpls()
        known = self._generic.get(hook)
        if known is not None and known[0] == impls:  # the same implementations as last time: same callers
            _, spec, plain, wrapped = known
        else:
            spec = _spec_args(caller) or tuple(kwargs)
            plain = [Impl(i, spec) for i in reversed(impls) if not _is_wrapper(i)]
            wrapped = any(_is_wrapper(i) for i in impls)
            if caller.spec is not None:
                self._generic[hook] = (impls, spec, plain, wrapped)
        values = tuple(kwargs.get(a) for a in spec)

        def run(impl: Impl) -> Any:
            try:
                result = impl.call(*values)
            except Exception:
                log.exception("%s hook of plugin %r failed (skipped)", hook, impl.plugin_name)
                return None
            if self.trace:
                self._trace(hook, impl, values, spec, result)
            return result

        if not wrapped:  # pluggy's answer without pluggy: the non-None results in order, or the first one
            first = caller.spec is not None and caller.spec.opts.get("firstresult")
            results = []
            for impl in plain:
                result = run(impl)
                if result is not None:
                    if first:
                        return result
                    results.append(result)
            return None if first else results

        def shim(impl: Impl) -> Callable[[], Any]:
            return lambda: run(impl)

        wrappers = self.pm.subset_hook_caller(hook, {i.plugin for i in impls if not _is_wrapper(i)})
        return wrappers.call_extra([shim(i) for i in reversed(plain)], dict(kwargs))


def _post_failed(plugin: str) -> None:
    log.exception("post_tool_call hook of plugin %r failed (ignored)", plugin)


def _transform_failed(plugin: str) -> None:
    log.exception("transform_tool_result hook of plugin %r failed; result left as it was", plugin)


def _short(args: Mapping[str, Any]) -> str:
    """Arguments for a trace line; objects like the registry or the CLI group print as ``...``."""
    return "{" + ", ".join(f"{k!r}: ..." for k in args) + "}"
