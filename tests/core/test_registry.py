"""The registry: entries, conflicts, generation counter, thread safety and the bound proxy."""

from __future__ import annotations

import threading

import pytest

from hermes_core import (
    InvalidSchemaError,
    ToolAlreadyRegistered,
    ToolNameConflict,
    ToolRegistry,
    registry,
)
from hermes_core.registry import Provenance, bound_registry, provenance
from hermes_core.schema import SchemaChecker


def schema(name: str, **props: dict) -> dict:
    return {
        "name": name,
        "description": f"the {name} tool",
        "parameters": {"type": "object", "properties": props or {"x": {"type": "integer"}}},
    }


def test_entry_fields_and_defaults() -> None:
    reg = ToolRegistry()

    async def ahandler(x: int) -> int:
        return x

    entry = reg.register(name="a", toolset="ts", schema=schema("a"), handler=ahandler, requires_env="TOKEN")
    assert entry.is_async is True
    assert entry.description == "the a tool"
    assert entry.requires_env == ("TOKEN",)
    sync = reg.register(
        name="b", toolset="ts", schema=schema("b"), handler=lambda x: x, description="own words"
    )
    assert sync.is_async is False and sync.description == "own words"
    assert not hasattr(sync, "__dict__")  # __slots__ keeps 10,000 entries small


def test_generation_bumps_only_on_success() -> None:
    reg = ToolRegistry()
    assert reg.generation == 0
    reg.register(name="a", toolset="one", schema=schema("a"), handler=print)
    assert reg.generation == 1
    with pytest.raises(ToolNameConflict) as info:
        reg.register(name="a", toolset="two", schema=schema("a"), handler=print)
    assert "clashes" in str(info.value) and info.value.existing.toolset == "one"
    with pytest.raises(ToolAlreadyRegistered):
        reg.register(name="a", toolset="one", schema=schema("a"), handler=print)
    assert reg.generation == 1 and reg["a"].toolset == "one"
    reg.register(name="a", toolset="two", schema=schema("a"), handler=print, replace=True)
    assert reg.generation == 2 and reg["a"].toolset == "two"
    assert reg.deregister("a") is not None and reg.generation == 3
    assert reg.deregister("a") is None and reg.generation == 3


def test_clash_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    reg = ToolRegistry()
    reg.register(name="a", toolset="one", schema=schema("a"), handler=print)
    with pytest.raises(ToolNameConflict):
        reg.register(name="a", toolset="two", schema=schema("a"), handler=print)
    assert any("clashes" in r.getMessage() for r in caplog.records)


def test_mcp_toolsets_may_replace_each_other() -> None:
    reg = ToolRegistry()
    reg.register(name="fetch", toolset="mcp-one", schema=schema("fetch"), handler=print)
    reg.register(name="fetch", toolset="mcp-two", schema=schema("fetch"), handler=print)
    assert reg["fetch"].toolset == "mcp-two"
    with pytest.raises(ToolNameConflict):
        reg.register(name="fetch", toolset="web", schema=schema("fetch"), handler=print)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"name": "other", "parameters": {"type": "object"}}, "names the tool 'other'"),
        ("not a dict", "must be a dict"),
        ({"name": "t", "parameters": {"type": "string"}}, "type 'object'"),
        (
            {"name": "t", "parameters": {"type": "object", "properties": {"x": {"type": "integr"}}}},
            "not valid JSON Schema",
        ),
        ({"name": "t", "parameters": {"type": "object", "required": "x"}}, "not valid JSON Schema"),
    ],
)
def test_invalid_schemas_are_refused(bad: object, message: str, tmp_path) -> None:
    reg = ToolRegistry(schema_checker=SchemaChecker(tmp_path / "verdicts.json"))
    with pytest.raises(InvalidSchemaError, match=message):
        reg.register(name="t", toolset="ts", schema=bad, handler=print)  # type: ignore[arg-type]
    assert len(reg) == 0 and reg.generation == 0


def test_schema_verdicts_are_cached_on_disk(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Verdicts from jsonschema (another dialect than 2020-12, which is checked directly) are cached."""
    from hermes_core.schema import _metaschema

    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {}}
    cache = tmp_path / "verdicts.json"
    _metaschema._known_valid.clear()  # verdicts another test's registry left in this process
    checker = SchemaChecker(cache)
    reg = ToolRegistry(schema_checker=checker)
    reg.register(name="t", toolset="ts", schema={"name": "t", "parameters": draft7}, handler=print)
    reg.register(
        name="u", toolset="ts", schema=schema("u", y={"type": "string", "minLength": 3}), handler=print
    )
    checker.flush()
    assert cache.exists() and len(cache.read_text()) > 10
    _metaschema._known_valid.clear()  # as in a new process
    asked: list[object] = []
    monkeypatch.setattr(_metaschema, "metaschema_problems", lambda params: asked.append(params) or [])
    reg2 = ToolRegistry(schema_checker=SchemaChecker(cache))
    reg2.register(name="t", toolset="ts", schema={"name": "t", "parameters": draft7}, handler=print)
    assert asked == []  # warm: the cached verdict, no jsonschema
    cache.write_text("{corrupt")  # a corrupt cache only means a recheck
    _metaschema._known_valid.clear()
    reg3 = ToolRegistry(schema_checker=SchemaChecker(cache))
    reg3.register(name="t", toolset="ts", schema={"name": "t", "parameters": draft7}, handler=print)
    assert asked == [draft7]


def test_provenance_is_recorded() -> None:
    reg = ToolRegistry()
    with provenance(Provenance("weather", "hermes-weather", "1.0", "entry point")):
        entry = reg.register(name="w", toolset="weather", schema=schema("w"), handler=print)
    assert (entry.plugin, entry.distribution, entry.version, entry.source) == (
        "weather",
        "hermes-weather",
        "1.0",
        "entry point",
    )


def test_proxy_forwards_to_the_bound_registry() -> None:
    one, two = ToolRegistry(), ToolRegistry()
    with bound_registry(one):
        registry.register(name="a", toolset="ts", schema=schema("a"), handler=print)
        with bound_registry(two):
            registry.register(name="a", toolset="other", schema=schema("a"), handler=print)
    assert one["a"].toolset == "ts" and two["a"].toolset == "other"


def test_the_registry_object_is_the_module_it_names() -> None:
    import importlib
    import sys

    import hermes_core.registry as as_module

    assert registry is as_module is sys.modules["hermes_core.registry"]
    assert importlib.import_module("hermes_core.registry") is registry
    reg = ToolRegistry()
    with bound_registry(reg):
        entry = as_module.register(name="m", toolset="ts", schema=schema("m"), handler=print, timeout=3.0)
        assert registry.get("m") is entry and registry.names() == ["m"] and registry.generation == 1
    assert entry.timeout == 3.0 and "m" in reg


def test_concurrent_registration_is_consistent() -> None:
    reg = ToolRegistry()
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(200):
                reg.register(name=f"t{n}_{i}", toolset=f"ts{n}", schema=schema(f"t{n}_{i}"), handler=print)
                if i % 3 == 0:
                    reg.deregister(f"t{n}_{i}")
                list(reg.entries())
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(reg) == 8 * (200 - 67)
    assert reg.generation == 8 * (200 + 67)


def test_register_takes_the_entry_fields_and_nothing_else() -> None:
    """The fields are declared once, on ``ToolEntry``: register, the proxy and the entry all follow them."""
    from dataclasses import fields

    from hermes_core import ToolEntry

    reg = ToolRegistry()
    declared = [f.name for f in fields(ToolEntry) if f.init]
    assert declared[:4] == ["name", "toolset", "schema", "handler"] and "timeout" in declared
    with pytest.raises(TypeError):
        ToolEntry("a", "t", schema("a"), print)  # type: ignore[misc]  # keywords only
    with pytest.raises(InvalidSchemaError, match=r"unknown field\(s\) \['chek_fn'\].*check_fn"):
        reg.register(name="a", toolset="t", schema=schema("a"), handler=print, chek_fn=None)
    with pytest.raises(InvalidSchemaError, match=r"unknown field\(s\) \['plugin'\]"):
        reg.register(name="a", toolset="t", schema=schema("a"), handler=print, plugin="builtin")
    with pytest.raises(InvalidSchemaError, match="missing handler"):
        reg.register(name="a", toolset="t", schema=schema("a"))
    with pytest.raises(InvalidSchemaError, match="both by position and by name"):
        reg.register("a", "t", schema("a"), print, name="b")
    assert len(reg) == 0 and reg.generation == 0
    entry = reg.register("a", "t", schema("a"), print, None, ("TOKEN",), timeout=3.0, parallel_safe=True)
    assert (entry.requires_env, entry.timeout, entry.parallel_safe, entry.plugin) == (
        ("TOKEN",),
        3.0,
        True,
        None,
    )
    with bound_registry(reg), provenance(Provenance(plugin="mine", source="api")):
        proxied = registry.register(name="b", toolset="t", schema=schema("b"), handler=print, emoji="*")
    assert proxied is reg.get("b") and (proxied.plugin, proxied.source, proxied.emoji) == ("mine", "api", "*")
