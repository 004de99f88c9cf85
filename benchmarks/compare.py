"""Two installs side by side: one benchmark script run by a baseline and a candidate interpreter in alternation.

Usage::

    python benchmarks/compare.py BASELINE_PYTHON CANDIDATE_PYTHON [--rounds N] SCRIPT [SCRIPT_ARGS...]

Each round runs ``SCRIPT SCRIPT_ARGS`` once with each interpreter (a fresh process each, the order rotating
every round, from a scratch working directory so no source tree shadows the installed package). The script's
result lines (``label: min X unit  median Y unit ...``, as ``_util.line`` prints them) are collected per label;
for each label the comparison prints the baseline's and the candidate's min and median over the rounds (of the
per-run minima and medians) and the candidate/baseline ratio of each. Install each side without ``-e``
(``pip install .`` into a scratch venv) so both run what a user would.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

LINE = re.compile(
    r"^(?P<label>.+?)\s*: min\s+(?P<min>[\d.]+) (?P<unit>\S+)\s+median\s+(?P<median>[\d.]+) \S+"
)


def results(output: str) -> dict[str, tuple[float, float, str]]:
    """``{label: (min, median, unit)}`` from a benchmark script's output."""
    found = {}
    for line in output.splitlines():
        match = LINE.match(line.strip())
        if match:
            found[match["label"]] = (float(match["min"]), float(match["median"]), match["unit"])
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("baseline", help="the baseline's python (a venv with the old install)")
    parser.add_argument("candidate", help="the candidate's python (a venv with the new install)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("script", type=Path)
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args(argv)
    sides = {"baseline": opts.baseline, "candidate": opts.candidate}
    runs: dict[str, dict[str, list[tuple[float, float]]]] = {side: {} for side in sides}
    units: dict[str, str] = {}
    script = str(opts.script.resolve())
    with tempfile.TemporaryDirectory(prefix="hermes-compare-") as scratch:
        for r in range(opts.rounds):
            order = list(sides) if r % 2 == 0 else list(reversed(sides))
            for side in order:
                done = subprocess.run(
                    [sides[side], script, *opts.args], cwd=scratch, capture_output=True, text=True, check=True
                )
                for label, (low, mid, unit) in results(done.stdout).items():
                    runs[side].setdefault(label, []).append((low, mid))
                    units[label] = unit
    print(f"{opts.script.name} {' '.join(opts.args)}: {opts.rounds} interleaved rounds, fresh processes")
    print(f"{'':40s}  {'baseline min/median':>22s}  {'candidate min/median':>22s}  ratio min / median")
    for label, base in runs["baseline"].items():
        cand = runs["candidate"].get(label)
        if not cand:
            continue
        b_min, b_mid = min(v[0] for v in base), statistics.median(v[1] for v in base)
        c_min, c_mid = min(v[0] for v in cand), statistics.median(v[1] for v in cand)
        unit = units[label]
        print(
            f"{label[:40]:40s}  {b_min:9.2f} /{b_mid:9.2f} {unit:2s}  {c_min:9.2f} /{c_mid:9.2f} {unit:2s}"
            f"  {c_min / b_min:5.3f}x / {c_mid / b_mid:5.3f}x"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
