"""Process start to a loaded ToolSystem (built-ins + 100 drop-in plugin files), in fresh processes.

``python -c pass``, the load with warm caches (the entry-point, drop-in scan and schema verdict caches a
previous start leaves) and the load with cold caches (removed before each of its runs) alternate round after
round; each prints min and median, and the difference to bare Python; then the load plus the first
``definitions(enabled=["all"])`` (every tool's check runs: their first imports), with the drop-ins and without
(the built-ins alone, a home with no drop-in folder). Targets: a warm start, and a
warm start with the first definitions, each at most 100 ms more than ``python -c pass``. Measure a non-editable
install (``pip install .``), as users get it.
``--baseline PYTHON`` adds the warm load of another install (a venv with an earlier version) to the same
interleaved rounds, with its own home and drop-in folder, and prints the ratio of the two.
Run: ``python benchmarks/bench_startup.py [rounds] [--baseline PYTHON]``.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _util import interleave_processes, line, rounds_and_baseline, run_ms

PLUGIN = """
from hermes_core import registry

def handler(a: int, b: int) -> int:
    return a + b

registry.register(
    name="dropin_{i}",
    toolset="dropins",
    schema={{"name": "dropin_{i}", "description": "Drop-in tool {i}.",
            "parameters": {{"type": "object", "properties": {{"a": {{"type": "integer"}}, "b": {{"type": "integer"}}}},
                           "required": ["a", "b"]}}}},
    handler=handler,
)
"""

LOAD = (
    "from hermes_core import ToolSystem; s = ToolSystem.load(); "
    "assert len(s.registry) >= 100, len(s.registry)"
)
LOAD_DEFINITIONS = (
    "from hermes_core import ToolSystem; s = ToolSystem.load(); "
    "assert len(s.definitions(enabled=['all'])) > 10"
)


def _home() -> Path:
    home = Path(tempfile.mkdtemp(prefix="hermes-bench-"))
    plugins = home / "plugins"
    plugins.mkdir()
    for i in range(100):
        (plugins / f"plugin_{i:03d}.py").write_text(PLUGIN.format(i=i))
    return home


def main(rounds: int = 15, baseline: str | None = None) -> None:
    home = _home()
    env = {**os.environ, "HERMES_HOME": str(home), "HERMES_LOAD_PLUGINS": "builtin"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's machine keeps bytecode; both sides get the same
    python = sys.executable
    scratch = str(home)  # not the source tree: python -c puts the cwd first on sys.path

    # the cold runs get a home of their own: removing its caches must not make the warm runs' caches cold
    cold_home = _home()
    commands = {
        "bare": [python, "-c", "pass"],
        "warm": [python, "-c", LOAD],
        "cold": [python, "-c", f"import os; os.environ['HERMES_HOME'] = {str(cold_home)!r}; {LOAD}"],
        "definitions": [python, "-c", LOAD_DEFINITIONS],
    }
    bare_home = Path(tempfile.mkdtemp(prefix="hermes-bench-"))  # no drop-in folder: the built-ins alone
    commands["definitions, built-ins only"] = [
        python,
        "-c",
        f"import os; os.environ['HERMES_HOME'] = {str(bare_home)!r}; {LOAD_DEFINITIONS}",
    ]
    other = _home() if baseline else None
    if baseline and other:  # the other install keeps its caches in its own home
        commands["baseline"] = [
            baseline,
            "-c",
            f"import os; os.environ['HERMES_HOME'] = {str(other)!r}; {LOAD}",
        ]
        commands["baseline definitions"] = [
            baseline,
            "-c",
            f"import os; os.environ['HERMES_HOME'] = {str(other)!r}; {LOAD_DEFINITIONS}",
        ]
        run_ms(commands["baseline"], env, 2, scratch)
    run_ms([python, "-c", LOAD_DEFINITIONS], env, 2, scratch)  # write bytecode and the caches
    run_ms(commands["definitions, built-ins only"], env, 2, scratch)
    samples = interleave_processes(
        commands,
        env,
        rounds,
        scratch,
        before={"cold": lambda: shutil.rmtree(cold_home / "cache", ignore_errors=True)},
    )
    bare = samples["bare"]
    print(f"{rounds} rounds, each sample a fresh process ({python})")
    print(line("python -c pass", bare, "ms"))
    for label, key in (
        ("load, warm caches (built-ins + 100)", "warm"),
        ("load, cold caches", "cold"),
        ("load + first definitions(all), warm", "definitions"),
        ("the same, built-ins only (no drop-ins)", "definitions, built-ins only"),
    ):
        extra = [s - b for s, b in zip(samples[key], bare, strict=True)]
        target = "  (target <= +100 ms)" if key != "cold" else ""
        print(
            line(
                label,
                samples[key],
                "ms",
                extra=f"  over bare: min +{min(extra):.1f} median +{statistics.median(extra):.1f} ms{target}",
            )
        )
    if baseline and other:
        base = samples["baseline"]
        extra = [s - b for s, b in zip(base, bare, strict=True)]
        print(
            line(
                f"baseline warm load ({baseline})",
                base,
                "ms",
                extra=f"  over bare: min +{min(extra):.1f} median +{statistics.median(extra):.1f} ms",
            )
        )
        warm = samples["warm"]
        print(
            f"{'warm load / baseline':38s}: min {min(warm) / min(base):.3f}x  median "
            f"{statistics.median(warm) / statistics.median(base):.3f}x"
        )
        base_defs, defs = samples["baseline definitions"], samples["definitions"]
        extra = [s - b for s, b in zip(base_defs, bare, strict=True)]
        print(
            line(
                "baseline load + first definitions",
                base_defs,
                "ms",
                extra=f"  over bare: min +{min(extra):.1f} median +{statistics.median(extra):.1f} ms",
            )
        )
        print(
            f"{'load + definitions / baseline':38s}: min {min(defs) / min(base_defs):.3f}x  median "
            f"{statistics.median(defs) / statistics.median(base_defs):.3f}x"
        )
        shutil.rmtree(other, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(bare_home, ignore_errors=True)
    shutil.rmtree(cold_home, ignore_errors=True)


if __name__ == "__main__":
    rounds, base = rounds_and_baseline(sys.argv[1:])
    main(*rounds, baseline=base)
