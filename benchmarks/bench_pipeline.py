"""The full call pipeline against ``handler(**json.loads(s))``, side by side in one run.

Targets (issue 3): with validation and 2 pre + 2 post no-op hooks at most 3x the raw call; with no hooks at
most 2x.  Also call_many of 8 read-only tools that each wait 100 ms (target: under 150 ms in total).
Run: ``python benchmarks/bench_pipeline.py``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _util import per_call_ns

os.environ.setdefault("HERMES_HOME", tempfile.mkdtemp(prefix="hermes-bench-"))

from hermes_core import ToolSystem, hookimpl

SCHEMA = {
    "name": "add",
    "description": "Add two integers.",
    "parameters": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
}
RAW = '{"a": 1, "b": 2}'


def add(a: int, b: int) -> int:
    return a + b


class NoOp:
    @hookimpl
    def pre_tool_call(self, name, arguments):
        return None

    @hookimpl
    def post_tool_call(self, name, outcome):
        return None


def build(*plugins: object) -> ToolSystem:
    system = ToolSystem.load(plugins_dir=False, load_entry_points=False, plugins=plugins)
    system.registry.register(name="add", toolset="math", schema=SCHEMA, handler=add)
    assert system.call("add", RAW) == "3"
    return system


def main(number: int = 50_000) -> None:
    plain = build()
    hooked = build(NoOp(), NoOp())
    loads = json.loads

    def raw() -> object:
        return add(**loads(RAW))

    r = per_call_ns(raw, number)
    p = per_call_ns(lambda: plain.call("add", RAW), number)
    h = per_call_ns(lambda: hooked.call("add", RAW), number)
    print(f"raw handler(**json.loads(s))       : {r:8.0f} ns")
    print(f"pipeline, validation, no hooks     : {p:8.0f} ns  ratio {p / r:5.2f}x (target <= 2x)")
    print(f"pipeline, validation, 2 pre+2 post : {h:8.0f} ns  ratio {h / r:5.2f}x (target <= 3x)")

    def wait(i: int) -> int:
        time.sleep(0.1)
        return i

    plain.registry.register(
        name="wait",
        toolset="t",
        handler=wait,
        parallel_safe=True,
        schema={"name": "wait", "parameters": {"type": "object", "properties": {"i": {"type": "integer"}}}},
    )
    calls = [("wait", {"i": i}) for i in range(8)]
    plain.call_many(calls)
    start = time.perf_counter()
    out = plain.call_many(calls)
    elapsed = (time.perf_counter() - start) * 1000
    assert out == [str(i) for i in range(8)]
    print(
        f"call_many, 8 read-only x 100 ms    : {elapsed:8.1f} ms (sequential would be 800 ms; target < 150 ms)"
    )
    plain.close()
    hooked.close()


if __name__ == "__main__":
    main()
