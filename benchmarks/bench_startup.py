"""Process start to a loaded ToolSystem (built-ins + 100 drop-in plugin files), warm and cold caches.

Target (issue 2): warm start at most 100 ms more than ``python -c pass``.  Run: ``python benchmarks/bench_startup.py``.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _util import median, run_ms

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


def main(repeat: int = 15) -> None:
    home = Path(tempfile.mkdtemp(prefix="hermes-bench-"))
    plugins = home / "plugins"
    plugins.mkdir()
    for i in range(100):
        (plugins / f"plugin_{i:03d}.py").write_text(PLUGIN.format(i=i))
    env = {**os.environ, "HERMES_HOME": str(home), "HERMES_LOAD_PLUGINS": "builtin"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's machine keeps bytecode; both sides get the same
    python = sys.executable

    run_ms([python, "-c", LOAD], env, 2)  # write bytecode and the caches
    bare = run_ms([python, "-c", "pass"], env, repeat)
    warm = run_ms([python, "-c", LOAD], env, repeat)
    cold = []
    for _ in range(max(repeat // 3, 3)):
        shutil.rmtree(home / "cache", ignore_errors=True)
        cold += run_ms([python, "-c", LOAD], env, 1)
    b, w, c = median(bare), median(warm), median(cold)
    print(f"python -c pass                      : {b:7.1f} ms (median of {repeat})")
    print(
        f"load, warm caches (built-ins + 100) : {w:7.1f} ms  -> +{w - b:.1f} ms over bare python (target <= +100 ms)"
    )
    print(f"load, cold caches                   : {c:7.1f} ms  -> +{c - b:.1f} ms over bare python")
    print(f"ratio warm/bare                     : {w / b:7.2f}x")
    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
