"""Argument handling cost: ``handler(**json.loads(s))`` vs. the compiled processor, side by side.

Run: ``.venv/bin/python benchmarks/bench_args.py``. Prints ns per call for each case and the ratio of the
full pipeline (compiled processor + handler call) to the raw baseline; the budget is 2x.
"""

from __future__ import annotations

import json
import sys
import timeit
from collections.abc import Callable
from typing import Any

from hermes_core.schema._args import compile_arguments, parse_tool_arguments
from hermes_core.schema._parse import _no_duplicates

SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}
RICHER = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1},
        "offset": {"type": "integer", "minimum": 0},
        "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "mode": {"enum": ["r", "w", "a"]},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["path"],
}


def handler(a: Any = None, b: Any = None, **rest: Any) -> Any:
    return a


def best_ns(fn: Callable[[], Any], number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=7)) / number * 1e9


def main() -> None:
    number = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    s = '{"a": 1, "b": 2}'
    proc = compile_arguments(SCHEMA)
    loads = json.loads
    raw = best_ns(lambda: handler(**loads(s)), number)
    compiled = best_ns(lambda: handler(**proc(s)), number)
    print(f"raw      handler(**json.loads(s))       {raw:8.0f} ns/call")
    print(f"compiled handler(**processor(s))        {compiled:8.0f} ns/call")
    print(f"ratio    compiled / raw                 {compiled / raw:8.2f}x   (budget 2.00x)")
    print(f"overhead compiled - raw                 {compiled - raw:8.0f} ns/call")

    # an option measured before choosing the design (same input, same handler)
    hooked = json.JSONDecoder(object_pairs_hook=_no_duplicates)
    alt_hook = best_ns(lambda: handler(**hooked.decode(s)), number)
    print(
        f"option   json with object_pairs_hook      {alt_hook:8.0f} ns/call  ({alt_hook / raw:.2f}x; json.loads + a duplicate-key hook)"
    )

    rich = compile_arguments(RICHER)
    r = '{"path": "README.md", "offset": 0, "limit": null, "mode": "r", "tags": ["a", "b"]}'
    base = best_ns(lambda: handler(**loads(r)), number)
    full = best_ns(lambda: handler(**rich(r)), number)
    print(f"richer schema: raw {base:.0f} ns, compiled {full:.0f} ns, ratio {full / base:.2f}x")

    repaired = "{'a': '1', 'b': 2.0, 'sudo': True,}"
    slow = best_ns(lambda: handler(**proc(repaired)), number // 20)
    print(f"repair path (python literal, strings, extra key): {slow:.0f} ns/call")
    oneshot = best_ns(lambda: handler(**parse_tool_arguments(SCHEMA, s)), number // 10)
    print(f"parse_tool_arguments(schema, s) one-shot (cache lookup by schema text): {oneshot:.0f} ns/call")


if __name__ == "__main__":
    main()
