"""hookspecs.md stays true: every hook has a heading with its exact signature and a runnable example.

Each hook also has a test named after it (``test_<hook>``) that runs the documented example as a plugin.
"""

from __future__ import annotations

import inspect
import json
import re
import types
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from hermes_core import ToolSystem, hookspecs

DOC = Path(__file__).resolve().parents[1] / "hookspecs.md"
HOOKS = {
    name: fn
    for name, fn in vars(hookspecs).items()
    if inspect.isfunction(fn) and hasattr(fn, f"{hookspecs.PROJECT}_spec")
}


def signature(fn: types.FunctionType) -> str:
    return f"{fn.__name__}({', '.join(inspect.signature(fn).parameters)})"


def sections() -> dict[str, str]:
    text = DOC.read_text("utf-8")
    parts = re.split(r"^## ", text, flags=re.MULTILINE)[1:]
    return {part.splitlines()[0].strip(): part for part in parts}


def example(hook: str) -> types.ModuleType:
    """The documented example of ``hook``, executed as a plugin module."""
    body = sections()[signature(HOOKS[hook])]
    code = re.search(r"```python\n(.*?)```", body, re.DOTALL)
    assert code, f"no python example under {hook}"
    module = types.ModuleType(f"hookspecs_example_{hook}")
    exec(compile(code.group(1), f"hookspecs.md:{hook}", "exec"), module.__dict__)
    return module


def test_every_hook_is_documented_with_its_exact_signature() -> None:
    headings = set(sections())
    missing = [signature(fn) for fn in HOOKS.values() if signature(fn) not in headings]
    assert not missing, f"hookspecs.md lacks headings: {missing}"
    extra = [h for h in headings if h.split("(")[0] not in HOOKS]
    assert not extra, f"hookspecs.md documents hooks that do not exist: {extra}"


def test_every_hook_has_a_test_named_after_it() -> None:
    tests = {name for name in globals() if name.startswith("test_")}
    assert {f"test_{hook}" for hook in HOOKS} <= tests


def load(*plugins: object) -> ToolSystem:
    return ToolSystem.load(plugins_dir=False, load_entry_points=False, plugins=plugins)


def echo_tools(*names: str) -> object:
    """A plugin whose tools echo their arguments (stand-ins named like the built-ins)."""
    from hermes_core import hookimpl

    @hookimpl
    def register_tools(registry):
        for n in names:
            registry.register(
                name=n,
                toolset="files",
                handler=lambda **kw: json.dumps(kw, sort_keys=True),
                schema={
                    "name": n,
                    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
                },
            )

    return types.SimpleNamespace(register_tools=register_tools)


def test_register_tools() -> None:
    system = load(example("register_tools"))
    assert system.call("shout", {"text": "hi"}) == "HI!"
    assert "text is empty" in system.call("shout", {"text": " "})
    assert system.registry["shout"].emoji == "📣"


def test_register_toolsets() -> None:
    system = load(echo_tools("read_file", "search_files", "memory"), example("register_toolsets"))
    names = sorted(d["function"]["name"] for d in system.definitions(enabled=["research-plus"]))
    assert names == ["memory", "read_file", "search_files"]


def test_plugin_config_schema() -> None:
    module = example("plugin_config_schema")
    good = ToolSystem.load(
        plugins_dir=False,
        load_entry_points=False,
        plugins=[module],
        config={"plugins": {"shout": {"times": 3}}},
    )
    assert good.plugins.records[module.__name__].config_problems == []
    bad = ToolSystem.load(
        plugins_dir=False,
        load_entry_points=False,
        plugins=[module],
        config={"plugins": {"shout": {"times": "often", "suffix": {"env": "SHOUT_SUFFIX"}}}},
    )
    [problem] = bad.plugins.records[module.__name__].config_problems
    assert problem["path"] == "times" and "expected integer" in problem["message"]


def test_pre_tool_call() -> None:
    system = load(echo_tools("terminal", "write_file"), example("pre_tool_call"))
    assert system.call_outcome("terminal", {"command": "ls"}).status == "ok"
    assert system.call_outcome("terminal", {"command": "deploy prod"}).status == "denied"
    assert system.call_outcome("write_file", {}, session_id="guest-1").status == "blocked"
    assert system.call_outcome("write_file", {}, session_id="alice").status == "ok"


def test_post_tool_call() -> None:
    module = example("post_tool_call")
    system = load(module)

    def slow() -> str:
        import time

        time.sleep(1.05)
        return "ok"

    system.registry.register(name="slow", toolset="t", handler=slow, schema={"name": "slow"})
    system.call("slow")
    system.call("missing")
    assert module.SLOW_CALLS and module.SLOW_CALLS[0][:2] == ("slow", "ok")
    assert len(module.SLOW_CALLS) == 1


def test_transform_tool_result() -> None:
    system = load(example("transform_tool_result"))
    system.registry.register(
        name="search_files", toolset="file", handler=lambda: "  ", schema={"name": "search_files"}
    )
    assert system.call("search_files") == "No matches."


def test_register_commands() -> None:
    group = click.Group("hermes")
    module = example("register_commands")
    system = load(module)
    system.plugins.pm.hook.register_commands(cli=group)
    result = CliRunner().invoke(group, ["hello", "plugins"])
    assert result.exit_code == 0 and result.output == "hello plugins\n"


class _ScriptedModel:
    """A model client in-process (hosts may pass their own): one tool call, then an answer."""

    name = model = "scripted"
    tool_format = "openai"
    context_window = max_output_tokens = None

    def __init__(self) -> None:
        self.turn = 0

    def complete(self, messages, tools=(), *, on_text=None, on_retry=None, cancel=None):
        from hermes_core.models import ModelReply, ToolCall

        self.turn += 1
        if self.turn == 1:
            return ModelReply(
                tool_calls=[ToolCall("c1", "shout", '{"text": "hi"}')], stop_reason="tool_calls"
            )
        return ModelReply(text=f"it said {messages[-1]['content']}")


def test_on_agent_message() -> None:
    from hermes_core.agent import Agent

    module = example("on_agent_message")
    system = load(module, example("register_tools"))
    result = Agent(system, model=_ScriptedModel(), session_id="s1").run("shout hi")
    assert result.text == "it said HI!"
    assert module.TRANSCRIPT == [("s1", "-> shout"), ("s1", "it said HI!")]


def test_register_environments(tmp_path) -> None:
    import hermes_builtin.plugin

    module = example("register_environments")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with ToolSystem.load(
        plugins_dir=False,
        load_entry_points=False,
        plugins=[hermes_builtin.plugin, module],
        workspace=workspace,
        config={"environment": {"kind": "recorded"}},
    ) as system:
        assert system.call("terminal", {"command": "cd /tmp && export GREETING=hi"}).endswith("s]")
        out = system.call("terminal", {"command": "echo $GREETING from $PWD"})
        assert out.startswith("hi from /tmp\n")  # the local kind's session shell, behind its walls
        other = system.call("terminal", {"command": "echo ${GREETING:-none}"}, session_id="other")
        assert other.startswith("none\n")  # another session, another environment
    assert [c for _, c in module.COMMANDS] == [
        "cd /tmp && export GREETING=hi",
        "echo $GREETING from $PWD",
        "echo ${GREETING:-none}",
    ]
    assert {s for s, _ in module.COMMANDS} == {"default", "other"}


def test_agent_context() -> None:
    from hermes_core.agent import Agent

    class Recording(_ScriptedModel):
        def complete(self, messages, tools=(), **options):
            self.seen = messages[0]["content"]
            return super().complete(messages, tools, **options)

    system = load(example("agent_context"), echo_tools("terminal"))
    model = Recording()
    model.turn = 1  # answer at once
    Agent(system, model=model).run("hi")
    assert "## House rules" in model.seen and "make test" in model.seen
    Agent(system, model=model, disabled=["terminal"]).run("hi")
    assert "House rules" not in model.seen


@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_examples_compile(hook: str) -> None:
    assert example(hook) is not None


def test_register_tool_rankers() -> None:
    from hermes_core import hookimpl

    class Searchable:
        @hookimpl
        def register_tools(self, registry):  # type: ignore[no-untyped-def]
            for n in ("git_status", "git_stash", "kubectl_get", "tool_search"):
                registry.register(
                    name=n,
                    toolset="dev",
                    handler=lambda **kw: "ok",
                    schema={"name": n, "description": f"The {n} tool.", "parameters": {"type": "object"}},
                )

    module = example("register_tool_rankers")
    for ranker in ("fuzzy-names", ["bm25", "fuzzy-names"]):
        system = ToolSystem.load(
            plugins_dir=False,
            load_entry_points=False,
            plugins=[Searchable(), module],
            config={"tools": {"search_ranker": ranker, "search": "on", "search_core": []}},
        )
        found = system.search_tools("git stauts", limit=2)
        assert found.matches[0].name == "git_status", ranker
        assert "git_status" in {d["function"]["name"] for d in system.definitions()}  # loaded by the search
        system.close()
