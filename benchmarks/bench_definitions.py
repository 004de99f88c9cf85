"""definitions() first/repeated for hermes-cli, 10,000 registrations, resolving ``all``, and unseen schemas.

Everything that start-up state could flatter is measured in fresh processes, one per sample, the kinds
interleaved round after round (min and median printed):
- the first ``definitions(enabled=["hermes-cli"])`` of a freshly loaded system, and a repeated one;
- registering 10,000 tools with the schema check (after a start that left its caches), against no check;
- registering 2,000 tools whose schemas this machine never saw (empty caches);
- resolving ``all`` over the 10,000.
The metaschema check of an unseen schema is also timed in-process, side by side with jsonschema's
``check_schema`` (the check before), interleaved. Targets: first definitions <= 5 ms, repeated <= 5 us,
10,000 registrations <= 100 ms, an unseen schema checked >= 20x faster than jsonschema.
``--baseline PYTHON`` also times the first ``definitions(enabled=["hermes-core"])`` of another install (a venv
with an earlier version) in the same interleaved rounds, beside this one's.
Run: ``python benchmarks/bench_definitions.py [rounds] [--baseline PYTHON]``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _util import interleave, line, ratio, rounds_and_baseline

CHILD = "--child"


def schema(i: int, salt: str = "") -> dict:
    return {
        "name": f"tool_{i}",
        "description": f"Tool number {i}.",
        "parameters": {
            "type": "object",
            "properties": {f"a{salt}{i}": {"type": "integer", "minimum": 0}, "mode": {"enum": ["r", "w"]}},
            "required": [f"a{salt}{i}"],
        },
    }


def handler(**kw: object) -> object:
    return kw


def child(kind: str, home: str) -> None:
    """One sample, printed as a number on stdout."""
    os.environ["HERMES_HOME"] = home
    os.environ["HERMES_LOAD_PLUGINS"] = "builtin"
    if kind in ("first", "repeated", "first-core"):
        from hermes_core import ToolSystem

        system = ToolSystem.load(plugins_dir=False)
        toolset = "hermes-core" if kind == "first-core" else "hermes-cli"
        start = time.perf_counter()
        system.definitions(enabled=[toolset])
        first = (time.perf_counter() - start) * 1000
        if kind in ("first", "first-core"):
            print(first)
            return
        n = 20_000
        start = time.perf_counter()
        for _ in range(n):
            system.definitions(enabled=["hermes-cli"])
        print((time.perf_counter() - start) / n * 1e6)
        return
    from hermes_core import ToolRegistry
    from hermes_core.schema import SchemaChecker
    from hermes_core.selection import Toolsets

    count = 2_000 if kind == "unseen" else 10_000
    salt = f"u{time.time_ns()}" if kind == "unseen" else ""
    schemas = [schema(i, salt) for i in range(count)]
    cache = Path(home) / "cache" / ("unseen.json" if kind == "unseen" else "verdicts.json")
    registry = ToolRegistry(schema_checker=None if kind in ("bare", "resolve") else SchemaChecker(cache))
    start = time.perf_counter()
    for i, s in enumerate(schemas):
        registry.register(name=s["name"], toolset=f"ts{i % 50}", schema=s, handler=handler)
    elapsed = (time.perf_counter() - start) * 1000
    if kind == "prepare":
        registry.schema_checker.flush()  # type: ignore[union-attr]
    if kind == "resolve":
        start = time.perf_counter()
        assert len(Toolsets(registry).resolve(["all"])) == count
        elapsed = (time.perf_counter() - start) * 1000
    print(elapsed)


def unseen_in_process(rounds: int) -> None:
    from hermes_core.schema._metaschema import metaschema_problems, schema_problems

    counter = iter(range(10**9))

    def fresh() -> dict:
        return schema(next(counter), "p")["parameters"]

    samples = interleave(
        {"jsonschema": lambda: metaschema_problems(fresh()), "hermes": lambda: schema_problems(fresh())},
        number=40,
        rounds=rounds,
    )
    lo, mid = ratio(samples["jsonschema"], samples["hermes"])
    print(line("unseen schema, jsonschema check_schema", samples["jsonschema"], "us", 1000))
    print(
        line(
            "unseen schema, hermes metaschema check",
            samples["hermes"],
            "us",
            1000,
            f"  {lo:.0f}x / {mid:.0f}x faster (min / median; target >= 20x)",
        )
    )


def main(rounds: int = 9, baseline: str | None = None) -> None:
    home = tempfile.mkdtemp(prefix="hermes-bench-")
    other = tempfile.mkdtemp(prefix="hermes-bench-base-")
    env = {**os.environ, "HERMES_HOME": home}

    def sample(kind: str) -> float:
        python, where = (
            (baseline, other) if kind == "base-first-core" and baseline else (sys.executable, home)
        )
        child_kind = "first-core" if kind == "base-first-core" else kind
        argv = [python, __file__, CHILD, child_kind, where]
        out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout
        return float(out.strip().splitlines()[-1])

    sample("prepare")  # the warm verdict cache a previous start leaves behind
    sample("first")  # the entry-point cache and bytecode, as on any second start
    kinds = ["first", "repeated", "warm", "bare", "unseen", "resolve"]
    if baseline:
        sample("base-first-core")
        kinds += ["first-core", "base-first-core"]
    results: dict[str, list[float]] = {k: [] for k in kinds}
    for r in range(rounds):
        for kind in kinds[r % len(kinds) :] + kinds[: r % len(kinds)]:
            results[kind].append(sample(kind))
    print(f"{rounds} rounds, each sample a fresh process")
    print(line("definitions(hermes-cli), first call", results["first"], "ms", extra="  (target <= 5 ms)"))
    print(line("definitions(hermes-cli), repeated", results["repeated"], "us", extra="  (target <= 5 us)"))
    if baseline:
        print(line("definitions(hermes-core), first call", results["first-core"], "ms"))
        print(line(f"  the same, {baseline}", results["base-first-core"], "ms"))
    print(line("register 10,000, no schema check", results["bare"], "ms"))
    print(line("register 10,000, with schema check", results["warm"], "ms", extra="  (target <= 100 ms)"))
    per_tool = [ms * 1000 / 2000 for ms in results["unseen"]]
    print(line("register 2,000 never-seen schemas", results["unseen"], "ms"))
    print(line("  = per unseen tool", per_tool, "us"))
    print(line("resolve 'all' over 10,000", results["resolve"], "ms", extra="  (target <= 50 ms)"))
    unseen_in_process(rounds)
    import tracemalloc

    from hermes_core import ToolRegistry

    schemas = [schema(i) for i in range(10_000)]
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    measured = ToolRegistry()
    for i, s in enumerate(schemas):
        measured.register(name=s["name"], toolset=f"ts{i % 50}", schema=s, handler=handler)
    per_entry = (tracemalloc.get_traced_memory()[0] - before) / len(schemas)
    tracemalloc.stop()
    print(
        f"{'memory per entry':38s}: {per_entry:9.0f} bytes (entry + registry slot; schemas are the caller's)"
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == CHILD:
        child(sys.argv[2], sys.argv[3])
    else:
        rounds, base = rounds_and_baseline(sys.argv[1:])
        main(*rounds, baseline=base)
