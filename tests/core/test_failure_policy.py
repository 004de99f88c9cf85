"""What a plugin's failure costs: a lost name costs that tool alone; a plugin that fails whole takes its
``pre_tool_call`` with it, and then ``[plugins] on_failure`` refuses every call (the default for such a plugin)
or runs calls without it, as the config says."""

from __future__ import annotations

import textwrap
import types
from pathlib import Path
from typing import Any

import pytest

import hermes_builtin.plugin
from hermes_core import Block, ToolSystem, hookimpl
from hermes_core.doctor import run_doctor

GUARD_AND_CLASH = """
from hermes_core import Block, hookimpl, registry

@hookimpl
def pre_tool_call(name, arguments):
    if name == "terminal" and "curl" in arguments.get("command", ""):
        return Block("curl is not allowed here")

def fetch(url: str) -> str:
    return "fetched " + url

registry.register(
    name="read_file", toolset="mine",
    schema={"name": "read_file", "description": "Clashes with the built-in.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}},
    handler=lambda path="": "not the built-in",
)
registry.register(
    name="fetch", toolset="mine",
    schema={"name": "fetch", "description": "Its own tool.",
            "parameters": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}},
    handler=fetch,
)
"""

ADD = {
    "name": "add",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
}


def write(folder: Path, name: str, source: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(textwrap.dedent(source))


def with_add(system: ToolSystem) -> ToolSystem:
    system.registry.register(name="add", toolset="math", schema=ADD, handler=lambda a=0, b=0: a + b)
    return system


def test_a_plugin_that_loses_a_name_keeps_its_blocking_hook_and_its_other_tools(tmp_path: Path) -> None:
    write(tmp_path / "plugins", "guard", GUARD_AND_CLASH)
    with ToolSystem.load(
        load_entry_points=False,
        plugins_dir=tmp_path / "plugins",
        plugins=[hermes_builtin.plugin],
        config={"tools": {"check_timeout": 60}},  # terminal's sandbox probe may be slow on a loaded machine
    ) as system:
        record = system.plugins.records["dropin:guard"]
        assert record.status == "loaded" and record.hooks == ["pre_tool_call"]
        assert list(record.refused) == ["read_file"] and record.tools == ["fetch"]
        assert system.registry["read_file"].plugin == "hermes_builtin.plugin"
        blocked = system.call_outcome("terminal", {"command": "curl https://example.invalid/"})
        assert blocked.status == "blocked" and "curl is not allowed here" in blocked.result, blocked.result
        assert system.call("fetch", {"url": "u"}) == "fetched u"
        problems = [p for p in run_doctor(system).problems if p.plugin == "dropin:guard"]
        assert [(p.severity, p.check) for p in problems] == [("error", "clash")]
        assert "lost its tool 'read_file'" in problems[0].message and "-p no:guard" in problems[0].fix


class Policy:
    """A policy plugin whose register_tools is broken: it fails whole, its pre_tool_call with it."""

    @hookimpl
    def pre_tool_call(self, name: str) -> Any:
        return Block("never reached") if name == "nothing" else None

    @hookimpl
    def register_tools(self, registry: Any) -> None:
        raise RuntimeError("the tool table is corrupt")


class Observer:
    """A plugin without a policy hook, broken the same way."""

    @hookimpl
    def post_tool_call(self, name: str) -> None:
        return None

    @hookimpl
    def register_tools(self, registry: Any) -> None:
        raise RuntimeError("broken too")


def load(*plugins: object, config: dict[str, Any] | None = None) -> ToolSystem:
    return with_add(
        ToolSystem.load(load_entry_points=False, plugins_dir=False, plugins=plugins, config=config)
    )


def test_a_failed_policy_plugin_refuses_every_call_by_default() -> None:
    with load(Policy()) as system:
        record = next(r for r in system.plugin_records() if r.status == "failed")
        assert record.stage == "register_tools" and record.on_failure == "refuse"
        assert "pre_tool_call" in record.hooks
        outcome = system.call_outcome("add", {"a": 1, "b": 2})
        assert outcome.status == "blocked" and "the plugin failed to load" in outcome.result
        [policy] = [p for p in run_doctor(system).problems if p.check == "policy"]
        assert policy.severity == "error" and "every tool call is refused" in policy.message
        assert "on_failure = {" in policy.fix and '"continue"}' in policy.fix


def test_on_failure_continue_runs_calls_without_it_and_the_doctor_says_so() -> None:
    name = f"{__name__}.Policy"
    for config in (
        {"plugins": {"on_failure": "continue"}},
        {"plugins": {"on_failure": {"policy": "continue"}}},
    ):
        plugin = Policy()
        system = ToolSystem.load(load_entry_points=False, plugins_dir=False, config=config)
        system.register_plugin(plugin, name="policy")
        with with_add(system):
            assert system.call("add", {"a": 1, "b": 2}) == "3", name
            record = system.plugins.records["policy"]
            assert record.on_failure == "continue"
            [policy] = [p for p in run_doctor(system).problems if p.check == "policy"]
            assert policy.severity == "error" and "WITHOUT its policy" in policy.message


def test_a_failed_plugin_without_a_policy_hook_lets_calls_run_unless_told_otherwise() -> None:
    with load(Observer()) as system:
        assert system.call("add", {"a": 1, "b": 2}) == "3"
        assert not [p for p in run_doctor(system).problems if p.check == "policy"]
    with load(Observer(), config={"plugins": {"on_failure": "refuse"}}) as system:
        assert system.call_outcome("add", {"a": 1, "b": 2}).status == "blocked"


def test_a_policy_plugin_that_does_not_import_is_known_by_its_source(tmp_path: Path) -> None:
    write(
        tmp_path / "plugins",
        "limits",
        """
        from hermes_core import Block, hookimpl
        import hermes_no_such_module_for_limits

        @hookimpl
        def pre_tool_call(name):
            return None
        """,
    )
    with with_add(ToolSystem.load(load_entry_points=False, plugins_dir=tmp_path / "plugins")) as system:
        record = system.plugins.records["dropin:limits"]
        assert (
            record.status == "failed" and record.hooks == ["pre_tool_call"] and record.on_failure == "refuse"
        )
        assert system.call_outcome("add", {"a": 1, "b": 2}).status == "blocked"
        system.unregister_plugin("dropin:limits")  # the host gives up on it: calls run again
        assert system.call("add", {"a": 1, "b": 2}) == "3"


def test_a_register_tools_without_hookimpl_is_found(tmp_path: Path) -> None:
    module = types.ModuleType("forgetful")

    def register_tools(registry: Any) -> None:
        registry.register(name="never", toolset="t", schema={"name": "never"}, handler=lambda: "")

    register_tools.__module__ = "forgetful"
    module.register_tools = register_tools  # type: ignore[attr-defined]
    write(
        tmp_path / "plugins",
        "forgot",
        """
        from hermes_core import registry

        def register_tools(registry):
            registry.register(name="never_either", toolset="t", schema={"name": "never_either"}, handler=print)
        """,
    )
    with load(module) as system:
        assert system.plugins.records["forgetful"].unmarked == ["register_tools"]
    with ToolSystem.load(load_entry_points=False, plugins_dir=tmp_path / "plugins") as system:
        record = system.plugins.records["dropin:forgot"]
        assert record.unmarked == ["register_tools"] and "never_either" not in system.registry
        [problem] = [p for p in run_doctor(system).problems if p.plugin == "dropin:forgot"]
        assert problem.severity == "error" and "without @hookimpl" in problem.message
        assert "@hookimpl" in problem.fix


def test_strict_loading_still_raises_on_a_lost_name(tmp_path: Path) -> None:
    from hermes_core.plugins import PluginLoadError

    write(tmp_path / "plugins", "guard", GUARD_AND_CLASH)
    with pytest.raises(PluginLoadError, match="guard"):
        ToolSystem.load(
            load_entry_points=False,
            plugins_dir=tmp_path / "plugins",
            plugins=[hermes_builtin.plugin],
            strict=True,
        )
