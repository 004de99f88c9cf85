"""What the scheduler costs a ToolSystem that does not opt in, side by side with one that does.

Fresh processes, interleaved: ``ToolSystem.load()`` + one ``definitions()`` + one call, timed in each child;
"off" is the default (the scheduler's code is never imported), "on" passes ``scheduler=True``. Prints min and
median per variant and the ratio. Run with the interpreter of a non-editable install:

    python benchmarks/bench_scheduler_cost.py --rounds 15
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile

CHILD = """
import sys, time
t = time.perf_counter()
import hermes_builtin.plugin
from hermes_core import ToolSystem
s = ToolSystem.load(load_entry_points=False, plugins=[hermes_builtin.plugin], plugins_dir=False,
                    scheduler={scheduler})
s.definitions(); s.call("todo", {{"action": "list"}})
print((time.perf_counter() - t) * 1000)
s.close()
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"off": [], "on": []}
    with tempfile.TemporaryDirectory() as home:
        env = {"HERMES_HOME": home, "PATH": "/usr/bin:/bin"}
        for _ in range(args.rounds):
            for name, flag in (("off", "False"), ("on", "True")):
                out = subprocess.run(
                    [sys.executable, "-c", CHILD.format(scheduler=flag)],
                    env=env,
                    capture_output=True,
                    text=True,
                )
                times[name].append(float(out.stdout.strip().splitlines()[-1]))
    for name, values in times.items():
        print(f"{name:>3}: min {min(values):7.1f} ms  median {statistics.median(values):7.1f} ms")
    ratio = statistics.median(times["on"]) / statistics.median(times["off"])
    print(f"on/off median ratio {ratio:.3f}")


if __name__ == "__main__":
    main()
