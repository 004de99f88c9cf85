"""The hook runner: pluggy's wrappers and firstresult work through the real pipeline, or are refused loudly."""

from __future__ import annotations

import json
import logging
from typing import Any

import pluggy
import pytest

from hermes_core import Block, RequireApproval, Rewrite, ToolSystem, hookimpl
from hermes_core.hookspecs import PROJECT

ADD = {
    "name": "add",
    "description": "Add two integers.",
    "parameters": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
}


def make(*plugins: object, config: dict[str, Any] | None = None) -> ToolSystem:
    """A system with ``add`` and the plugins, each named after its class."""
    system = ToolSystem.load(plugins_dir=False, load_entry_points=False, config=config)
    system.registry.register(name="add", toolset="math", schema=ADD, handler=lambda a, b: a + b)
    for plugin in plugins:
        system.register_plugin(plugin, name=type(plugin).__name__)
    return system


def error_of(result: str) -> str:
    return str(json.loads(result)["error"])


class Policy:
    @hookimpl
    def pre_tool_call(self, arguments):
        if arguments.get("a") == 666:
            return Block("the number of the beast")
        if arguments.get("a") == 5:
            return Rewrite({"a": 50, "b": arguments["b"]})
        return None


class Observer:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    @hookimpl
    def post_tool_call(self, name, outcome):
        self.seen.append((name, outcome.status))


def test_a_new_style_wrapper_sees_and_changes_the_decisions() -> None:
    seen: list[list[Any]] = []

    class Veto:
        @hookimpl(wrapper=True)
        def pre_tool_call(self, arguments):
            decisions = yield
            seen.append(list(decisions))
            if arguments.get("a") == 13:
                return [*decisions, Block("13 is unlucky")]
            return decisions

    with make(Policy(), Veto()) as s:
        assert s.call("add", {"a": 5, "b": 1}) == "51"  # the policy's rewrite passes through the wrapper
        assert isinstance(seen[-1][0], Rewrite)
        out = s.call_outcome("add", {"a": 13, "b": 1})
        assert (
            out.status == "blocked" and "unlucky" in error_of(out.result) and "a hook wrapper" in out.result
        )
        beast = s.call_outcome("add", {"a": 666, "b": 1})
        assert beast.status == "blocked" and "Blocked by" in beast.result and "beast" in beast.result
        assert s.call("add", {"a": 1, "b": 1}) == "2" and seen[-1] == []


def test_an_old_style_hookwrapper_runs_around_the_observers() -> None:
    order: list[str] = []
    observer = Observer()

    class Timing:
        @hookimpl(hookwrapper=True)
        def post_tool_call(self, name):
            order.append("before")
            result = yield
            order.append(f"after {result.get_result()!r}")

    with make(observer, Timing()) as s:
        assert s.call("add", {"a": 1, "b": 2}) == "3"
    assert observer.seen == [("add", "ok")]
    assert order == ["before", "after []"]


def test_a_raising_wrapper_blocks_fail_closed_and_names_its_plugin(caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        @hookimpl(wrapper=True)
        def pre_tool_call(self):
            yield
            raise RuntimeError("policy store unreachable")

    caplog.set_level(logging.ERROR, logger="hermes")
    with make(Broken()) as s:
        out = s.call_outcome("add", {"a": 1, "b": 2})
    assert out.status == "blocked" and out.error_kind == "hook_error" and out.error_id
    assert "Broken" in error_of(out.result)
    assert any("policy store unreachable" in (r.exc_text or "") for r in caplog.records)


def test_a_wrapped_plain_hook_that_raises_still_blocks() -> None:
    class Crash:
        @hookimpl
        def pre_tool_call(self):
            raise RuntimeError("boom")

    class Passthrough:
        @hookimpl(wrapper=True)
        def pre_tool_call(self):
            return (yield)

    with make(Crash(), Passthrough()) as s:
        out = s.call_outcome("add", {"a": 1, "b": 2})
    assert out.status == "blocked" and out.error_kind == "hook_error" and "Crash" in out.result


def test_transform_wrapper_result_is_the_last_text() -> None:
    class Suffix:
        @hookimpl
        def transform_tool_result(self, result):
            return result + " units"

    class Prefix:
        @hookimpl(wrapper=True)
        def transform_tool_result(self):
            texts = yield
            return ["total: " + texts[-1]]

    with make(Suffix(), Prefix()) as s:
        assert s.call("add", {"a": 1, "b": 2}) == "total: 3 units"


def test_a_raising_post_wrapper_is_logged_and_changes_nothing(caplog: pytest.LogCaptureFixture) -> None:
    observer = Observer()

    class Loud:
        @hookimpl(wrapper=True)
        def post_tool_call(self):
            yield
            raise RuntimeError("observer wrapper failed")

    caplog.set_level(logging.ERROR, logger="hermes")
    with make(observer, Loud()) as s:
        assert s.call("add", {"a": 1, "b": 2}) == "3"
    assert observer.seen == [("add", "ok")]
    assert any("Loud" in r.getMessage() for r in caplog.records)


def test_wrappers_of_once_per_plugin_hooks_are_refused_on_the_plugin_record() -> None:
    class Sneaky:
        @hookimpl(wrapper=True)
        def register_tools(self, registry):
            yield
            registry.register(name="late", toolset="t", schema={"name": "late"}, handler=lambda: "x")

        @hookimpl
        def pre_tool_call(self):
            return Block("never installed")

    with make(Sneaky()) as s:
        record = next(r for r in s.plugin_records() if r.name == "Sneaky")
        assert record.status == "failed" and record.stage == "register"
        assert "register_tools cannot be a hook wrapper" in (record.error or "")
        assert "late" not in s.registry
        # its policy hook is gone with it, so calls are refused rather than run unguarded ([plugins] on_failure)
        refused = s.call_outcome("add", {"a": 1, "b": 2})
        assert refused.status == "blocked" and "Sneaky: the plugin failed to load" in refused.result
    with make(Sneaky(), config={"plugins": {"on_failure": "continue"}}) as s:
        assert s.call("add", {"a": 1, "b": 2}) == "3"  # its other hooks are not half-installed


def test_one_plugin_cannot_both_wrap_and_implement_a_hook() -> None:
    class Both:
        @hookimpl(wrapper=True, specname="pre_tool_call")
        def wrap(self):
            return (yield)

        @hookimpl
        def pre_tool_call(self):
            return None

    with make(Both()) as s:
        record = next(r for r in s.plugin_records() if r.name == "Both")
        assert record.status == "failed" and "both as a hook wrapper and as a plain hook" in (
            record.error or ""
        )


def test_generic_calls_honour_firstresult_and_isolate_failures(caplog: pytest.LogCaptureFixture) -> None:
    spec = pluggy.HookspecMarker(PROJECT)

    class Specs:
        @spec(firstresult=True)
        def pick_model(self, task):
            """A hook a host adds: the first plugin with an answer wins."""

        @spec
        def collect(self, task):
            """Every plugin's answer."""

    class Broken:
        @hookimpl(tryfirst=True)
        def pick_model(self, task):
            raise RuntimeError("broken picker")

        @hookimpl
        def collect(self, task):
            raise RuntimeError("broken collector")

    class First:
        @hookimpl
        def pick_model(self, task):
            return f"small for {task}"

        @hookimpl
        def collect(self, task):
            return 1

    class Second:
        @hookimpl
        def pick_model(self, task):
            return "large"

        @hookimpl
        def collect(self, task):
            return 2

    class Doubler:
        @hookimpl(wrapper=True)
        def collect(self):
            answers = yield
            return answers * 2

    caplog.set_level(logging.ERROR, logger="hermes")
    s = make()
    s.plugins.pm.add_hookspecs(Specs)
    for plugin in (First(), Second(), Broken(), Doubler()):
        s.register_plugin(plugin, name=type(plugin).__name__)
    hooks = s.plugins.hooks
    assert hooks.call("pick_model", task="summary") == "large"  # last registered runs first
    assert sorted(hooks.call("collect", task="x")) == [1, 1, 2, 2]
    assert any("broken picker" in (r.exc_text or "") for r in caplog.records)
    s.close()


def test_approval_requests_from_wrapped_hooks_are_honoured() -> None:
    class Ask:
        @hookimpl
        def pre_tool_call(self):
            return RequireApproval("ask first")

    class Passthrough:
        @hookimpl(wrapper=True)
        def pre_tool_call(self):
            return (yield)

    with make(Ask(), Passthrough()) as s:
        out = s.call_outcome("add", {"a": 1, "b": 2})
    assert out.status == "denied" and "ask first" in out.result


def test_the_wrapper_example_of_hookspecs_md_runs() -> None:
    import re
    import types
    from pathlib import Path

    intro = (Path(__file__).resolve().parents[2] / "hookspecs.md").read_text("utf-8").split("\n## ")[0]
    code = re.findall(r"```python\n(.*?)```", intro, re.DOTALL)[-1]
    module = types.ModuleType("hookspecs_wrapper_example")
    exec(compile(code, "hookspecs.md", "exec"), module.__dict__)
    with make(module) as s:
        s.registry.register(name="terminal", toolset="t", schema={"name": "terminal"}, handler=lambda: "ran")
        out = s.call_outcome("terminal", {})
        assert out.status == "blocked" and "off during the demo" in out.result
        assert s.call("add", {"a": 1, "b": 2}) == "3"
