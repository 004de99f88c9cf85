"""Toolsets, selection, check gating and definitions in every provider format."""

from __future__ import annotations

import json
import threading
import time

import pytest

from hermes_core import ToolSystem, hookimpl
from hermes_core.schema import provider_problems, render
from hermes_core.selection import ToolsetError, UnknownToolsetError


def tool(name: str, **params: object) -> dict:
    return {
        "name": name,
        "description": f"Tool {name}.",
        "parameters": {"type": "object", "properties": params or {"q": {"type": "string"}}},
    }


def system_with(*specs: tuple[str, str], **kw: object) -> ToolSystem:
    system = ToolSystem.load(plugins_dir=False, load_entry_points=False, check_schemas=False, **kw)
    for name, toolset in specs:
        system.registry.register(name=name, toolset=toolset, schema=tool(name), handler=lambda q="": q)
    return system


def names(defs: list[dict]) -> list[str]:
    return sorted(d["function"]["name"] for d in defs)


def test_composites_expand_to_any_depth_and_all_means_everything() -> None:
    s = system_with(("read", "file"), ("write", "file"), ("run", "terminal"), ("ask", "clarify"))
    s.toolsets.define_many(
        {
            "platform": {"includes": ["core"]},
            "core": {"tools": ["ask"], "includes": ["file"]},
            "debug": {"includes": ["platform", "terminal"]},
        }
    )
    assert names(s.definitions(enabled=["debug"])) == ["ask", "read", "run", "write"]
    assert names(s.definitions(enabled=["all"], disabled=["file"])) == ["ask", "run"]
    assert names(s.definitions(enabled=["debug"], disabled_tools=["run"])) == ["ask", "read", "write"]
    assert names(s.definitions()) == ["ask", "read", "run", "write"]


def test_cycles_and_unknown_includes_fail_at_definition() -> None:
    s = system_with(("read", "file"))
    with pytest.raises(ToolsetError, match=r"unknown toolset 'fiel'.*did you mean 'file'"):
        s.toolsets.define("x", {"includes": ["fiel"]})
    s.toolsets.define("a", {"includes": ["file"]})
    s.toolsets.define("b", {"includes": ["a"]})
    with pytest.raises(ToolsetError, match="cycle: a -> b -> a"):
        s.toolsets.define("a", {"includes": ["b"]})
    assert names(s.definitions(enabled=["a"])) == ["read"]  # the old definition is kept
    with pytest.raises(ToolsetError, match="cycle"):
        s.toolsets.define_many({"p": {"includes": ["q"]}, "q": {"includes": ["p"]}})
    with pytest.raises(UnknownToolsetError):
        s.definitions(enabled=["nonexistent"])


def test_requires_env_really_gates(monkeypatch: pytest.MonkeyPatch) -> None:
    s = system_with()
    s.registry.register(
        name="gh", toolset="git", schema=tool("gh"), handler=lambda q="": "ok", requires_env=("GH_TOKEN",)
    )
    monkeypatch.delenv("GH_TOKEN", raising=False)
    assert s.definitions() == []
    assert s.hidden() == {"gh": "missing environment variable GH_TOKEN"}
    outcome = s.call_outcome("gh", {})
    assert outcome.error_kind == "unknown_tool" and "GH_TOKEN" in outcome.result
    monkeypatch.setenv("GH_TOKEN", "x")
    s.invalidate_checks()
    assert names(s.definitions()) == ["gh"]


def test_flipped_check_is_seen_after_the_ttl_and_dispatch_rechecks() -> None:
    s = system_with(config={"tools": {"check_ttl": 0.05}})
    state = {"ok": True}
    s.registry.register(
        name="svc",
        toolset="svc",
        schema=tool("svc"),
        handler=lambda q="": "ran",
        check_fn=lambda: state["ok"],
    )
    assert names(s.definitions()) == ["svc"]
    state["ok"] = False
    time.sleep(0.06)
    assert s.definitions() == []
    assert s.call_outcome("svc", {}).status == "error"  # hidden tools cannot run
    state["ok"] = True
    time.sleep(0.06)
    assert s.call("svc", {}) == "ran"


def test_check_that_raises_or_hangs_hides_the_tool() -> None:
    s = system_with(config={"tools": {"check_timeout": 0.2}})
    release = threading.Event()

    def boom() -> bool:
        raise RuntimeError("no daemon")

    s.registry.register(name="a", toolset="t", schema=tool("a"), handler=print, check_fn=boom)
    s.registry.register(
        name="b", toolset="t", schema=tool("b"), handler=print, check_fn=lambda: release.wait(5)
    )
    s.registry.register(
        name="c",
        toolset="t",
        schema=tool("c"),
        handler=print,
        check_fn=lambda: (False, "binary 'ffmpeg' not found"),
    )
    started = time.perf_counter()
    assert s.definitions() == []
    assert time.perf_counter() - started < 1.5
    hidden = s.hidden()
    assert hidden["a"] == "check raised RuntimeError: no daemon"
    assert "timed out" in hidden["b"]
    assert hidden["c"] == "binary 'ffmpeg' not found"
    release.set()


def test_new_generation_is_seen_at_once_and_repeat_calls_are_cached() -> None:
    s = system_with(("a", "t"))
    first = s.definitions()
    assert s.definitions() == first and s.definitions()[0] is first[0]
    s.registry.register(name="b", toolset="t", schema=tool("b"), handler=print)
    assert names(s.definitions()) == ["a", "b"]
    s.registry.deregister("a")
    assert names(s.definitions()) == ["b"]


def test_dynamic_schema_overrides_follow_what_is_available() -> None:
    s = system_with(("search", "web"))

    def mention_search(available: frozenset[str]) -> dict | None:
        if "search" in available:
            return {"description": "Run code. Use search() for web lookups."}
        return None

    s.registry.register(
        name="code",
        toolset="code",
        schema=tool("code"),
        handler=print,
        dynamic_schema_overrides=mention_search,
    )
    by_name = {d["function"]["name"]: d for d in s.definitions()}
    assert "search()" in by_name["code"]["function"]["description"]
    only_code = s.definitions(enabled=["code"])
    assert only_code[0]["function"]["description"] == "Tool code."


def test_dynamic_schema_overrides_that_declare_system_get_the_system() -> None:
    seen: list[object] = []

    def per_config(available: frozenset[str], system: ToolSystem) -> dict | None:
        seen.append(system)
        return {"description": f"Greets in {system.plugin_config('greet').get('language', 'English')}."}

    for language, expected in ((None, "English"), ("Welsh", "Welsh")):
        config = {"plugins": {"greet": {"language": language}}} if language else None
        with ToolSystem.load(plugins_dir=False, load_entry_points=False, config=config) as s:
            s.registry.register("greet", "greet", tool("greet"), print, dynamic_schema_overrides=per_config)
            assert s.definitions()[0]["function"]["description"] == f"Greets in {expected}."
            assert seen[-1] is s


def test_provider_formats() -> None:
    schema = {
        "name": "find",
        "description": "Find things.",
        "parameters": {
            "type": "object",
            "$defs": {"mode": {"type": "string", "enum": ["fast", "deep"]}},
            "properties": {
                "query": {"type": "string", "description": "what"},
                "limit": {"type": ["integer", "null"], "default": 10},
                "mode": {"$ref": "#/$defs/mode"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "kind": {"const": "x"},
                "extra": {"type": "object", "additionalProperties": True},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    }
    openai = render(schema, "openai")
    assert openai["type"] == "function" and openai["function"]["parameters"] is schema["parameters"]
    assert render(schema, "anthropic")["input_schema"] == schema["parameters"]
    assert render(schema, "mcp")["inputSchema"] == schema["parameters"]
    gemini = render(schema, "gemini")["parameters"]
    text = json.dumps(gemini)
    for banned in ("$defs", "$ref", "additionalProperties", "default", "const"):
        assert banned not in text
    props = gemini["properties"]
    assert gemini["type"] == "OBJECT" and props["limit"] == {"type": "INTEGER", "nullable": True}
    assert props["mode"] == {"type": "STRING", "enum": ["fast", "deep"]}
    assert props["tags"]["items"] == {"type": "STRING"} and props["kind"]["enum"] == ["x"]
    assert render({"name": "noargs", "description": "d"}, "gemini") == {"name": "noargs", "description": "d"}
    with pytest.raises(ValueError, match="unknown format"):
        render(schema, "cohere")
    assert provider_problems(schema) == {"openai": [], "anthropic": [], "gemini": [], "mcp": []}
    assert provider_problems({"name": "bad name!", "parameters": {"type": "object", "anyOf": []}})["openai"]


def test_recursive_refs_render_for_gemini() -> None:
    schema = {
        "name": "tree",
        "parameters": {
            "type": "object",
            "$defs": {
                "node": {
                    "type": "object",
                    "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                }
            },
            "properties": {"root": {"$ref": "#/$defs/node"}},
        },
    }
    out = render(schema, "gemini")
    assert out["parameters"]["properties"]["root"]["type"] == "OBJECT"


def test_definitions_in_each_format_from_the_system() -> None:
    s = system_with(("a", "t"))
    assert s.definitions(format="anthropic")[0]["name"] == "a"
    assert s.definitions(format="gemini")[0]["name"] == "a"
    assert s.definitions(format="mcp")[0]["inputSchema"]["type"] == "object"


class ToolsetPlugin:
    @hookimpl
    def register_tools(self, registry):
        registry.register(name="x", toolset="xs", schema=tool("x"), handler=print)

    @hookimpl
    def register_toolsets(self):
        return {"bundle": {"includes": ["xs"], "description": "all the x"}}


def test_plugins_define_toolsets_and_config_adds_custom_ones() -> None:
    s = ToolSystem.load(
        plugins_dir=False,
        load_entry_points=False,
        plugins=[ToolsetPlugin()],
        config={"toolsets": {"custom": {"mine": {"includes": ["bundle"]}, "broken": {"includes": ["nope"]}}}},
    )
    assert names(s.definitions(enabled=["mine"])) == ["x"]
    assert any("nope" in e for e in s.toolset_errors)


def test_an_include_whose_tools_all_left_is_empty_not_an_error() -> None:
    s = system_with(("fetch", "web"), ("read", "file"))
    s.toolsets.define("research", {"includes": ["web", "file"]})
    s.registry.deregister_toolset("web")  # e.g. its plugin was removed
    assert names(s.definitions(enabled=["research"])) == ["read"]


def test_a_hanging_check_never_delays_another_tool_and_shows_its_verdict_when_it_answers() -> None:
    """Checks run off the call path: a call waits for nobody's check but its own tool's, and only until the
    check's deadline; definitions() waits once, until that deadline, then calls the tool unknown."""
    s = system_with(("fast", "t"), config={"tools": {"check_timeout": 0.5}})
    release = threading.Event()
    s.registry.register(
        name="slow",
        toolset="t",
        schema=tool("slow"),
        handler=lambda q="": "slow ran",
        check_fn=lambda: release.wait(30),  # a check that hangs for 30 s
    )
    s.availability.start(s.registry.entries())  # as load() does
    started = time.perf_counter()
    assert s.call("fast", {"q": "fast"}) == "fast"
    assert time.perf_counter() - started < 0.3  # the other tool's check is not waited for
    started = time.perf_counter()
    assert names(s.definitions()) == ["fast"]
    assert 0.3 < time.perf_counter() - started < 1.5  # waited until the check's deadline, not 30 s
    assert "timed out after 0.5 s" in s.hidden()["slow"] and "unknown" in s.hidden()["slow"]
    started = time.perf_counter()
    refused = s.call_outcome("slow", {})
    assert refused.error_kind == "unknown_tool" and "availability unknown" in refused.result
    assert names(s.definitions()) == ["fast"]
    assert time.perf_counter() - started < 0.3  # an overrun check is not waited for twice
    release.set()
    for _ in range(100):  # its answer is used at once, without waiting for the verdicts to expire
        if names(s.definitions()) == ["fast", "slow"]:
            break
        time.sleep(0.01)
    assert names(s.definitions()) == ["fast", "slow"] and s.call("slow", {}) == "slow ran"
    s.close()


def test_a_call_waits_for_its_own_running_check_only() -> None:
    s = system_with(config={"tools": {"check_timeout": 5}})
    gate = threading.Event()

    def check() -> bool:
        gate.wait(5)
        return True

    s.registry.register(
        name="gated", toolset="t", schema=tool("gated"), handler=lambda q="": "ran", check_fn=check
    )
    threading.Timer(0.2, gate.set).start()
    started = time.perf_counter()
    assert s.call("gated", {}) == "ran"  # its verdict was unknown: the call waited for that check
    assert 0.15 < time.perf_counter() - started < 3
    s.close()


def test_a_check_that_meets_a_half_made_import_is_asked_again_once() -> None:
    """Checks import on their own threads; an ImportError from a module another thread was still importing is
    tried once more, while a module that is really missing still hides the tool with the reason."""
    s = system_with()
    tries: list[int] = []

    def racing() -> bool:
        tries.append(1)
        if len(tries) == 1:
            raise ImportError("cannot import name 'environment_check' from 'hermes_core.environments'")
        return True

    def missing() -> bool:
        import hermes_no_such_module  # type: ignore[import-not-found]  # noqa: F401

        return True

    s.registry.register(name="a", toolset="t", schema=tool("a"), handler=print, check_fn=racing)
    s.registry.register(name="b", toolset="t", schema=tool("b"), handler=print, check_fn=missing)
    assert [d["function"]["name"] for d in s.definitions()] == ["a"]
    assert len(tries) == 2
    assert s.hidden()["b"] == "check raised ModuleNotFoundError: No module named 'hermes_no_such_module'"


def test_quick_checks_share_a_worker_and_never_run_on_the_callers_thread() -> None:
    """Twenty quick checks do not start twenty threads (each start costs the first definitions() a GIL
    hand-off); a check stuck past a moment gets the others a worker of their own (the hanging-check tests)."""
    s = system_with(config={"tools": {"check_timeout": 5}})
    ran_on: list[threading.Thread] = []  # the threads themselves: an ident may be reused once a thread ends

    def quick() -> bool:
        ran_on.append(threading.current_thread())
        return True

    for i in range(20):
        # twenty distinct check functions: a function shared by tools is run once
        s.registry.register(
            name=f"t{i}", toolset="t", schema=tool(f"t{i}"), handler=print, check_fn=lambda q=quick: q()
        )
    assert len(s.definitions()) == 20
    assert len(ran_on) == 20
    assert threading.current_thread() not in ran_on
    # one worker on a quiet machine; on a loaded one a worker that waits long for the CPU looks stuck, and
    # another is added every 50 ms while none answers (a thread per check would make it 20)
    assert len(set(ran_on)) < 10, len(set(ran_on))
    s.close()
