"""``definitions(enabled=["hermes-cli"])``, first and repeated, of two installs side by side (a change against its base).

Each sample is a fresh process of ``bench_definitions.py``'s own child (first call / 20,000 repeated calls), the two
installs alternating round after round; min and median of each and their ratio are printed. Install each side
non-editable into its own virtualenv first (``pip install <checkout>``).

Run: ``python benchmarks/bench_definitions_compare.py BASE_PYTHON NEW_PYTHON [rounds]``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _util import line, ratio

BENCH = str(Path(__file__).with_name("bench_definitions.py"))


def main() -> None:
    pythons = {"base": sys.argv[1], "new": sys.argv[2]}
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 15
    homes = {label: tempfile.mkdtemp(prefix=f"defs-{label}-") for label in pythons}
    scratch = tempfile.mkdtemp(prefix="defs-cwd-")  # no source tree on sys.path

    def sample(label: str, kind: str) -> float:
        env = {**os.environ, "HERMES_HOME": homes[label]}
        command = [pythons[label], BENCH, "--child", kind, homes[label]]
        out = subprocess.run(command, env=env, check=True, capture_output=True, text=True, cwd=scratch).stdout
        return float(out.strip().splitlines()[-1])

    for label in pythons:  # the caches a previous start leaves behind
        sample(label, "prepare")
        sample(label, "first")
    results: dict[tuple[str, str], list[float]] = {
        (side, k): [] for side in pythons for k in ("first", "repeated")
    }
    for r in range(rounds):
        order = list(pythons) if r % 2 == 0 else list(reversed(pythons))
        for kind in ("first", "repeated"):
            for label in order:
                results[(label, kind)].append(sample(label, kind))
    print(f"{rounds} rounds, each sample a fresh process, the two installs alternating")
    for kind, unit in (("first", "ms"), ("repeated", "us")):
        base, new = results[("base", kind)], results[("new", kind)]
        low, mid = ratio(new, base)
        print(line(f"definitions(hermes-cli) {kind}, base", base, unit))
        print(line(f"definitions(hermes-cli) {kind}, new", new, unit, extra=f"  ({low:.2f}x / {mid:.2f}x)"))


if __name__ == "__main__":
    main()
