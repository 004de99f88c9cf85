"""What the walls cost: a sandboxed ``true`` through the whole pipeline (``terminal``) against the same call with
no sandbox, and a file tool call with the path guard's host-run rule against the same call without it.

Targets (issue 19): a sandboxed ``terminal {"command": "true"}`` at most 10 ms more than unsandboxed, with
every wall of wave 3 up (user namespace, system-call filter, network namespace and proxy for network "on",
host-run files bound read-only and checked after the call, default limits); a file tool call at most 50 us
more than before (``read_file`` and ``write_file`` with the guard on; the rule is the only change on their path). Systems are
loaded once; calls alternate between the sides (interleaved), so machine noise hits both alike. Prints min
and median per side, the difference to the baseline and the ratio.

Run from a non-editable install: ``python benchmarks/bench_sandbox.py [rounds]``.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HERMES_HOME", tempfile.mkdtemp(prefix="hermes-bench-"))

import hermes_builtin.plugin
from hermes_core import ToolSystem
from hermes_core.sandbox import choose_backend
from hermes_core.security import _paths


def build(backend: str, workspace: Path, network: str = "on") -> ToolSystem:
    system = ToolSystem.load(
        plugins_dir=False,
        load_entry_points=False,
        plugins=[hermes_builtin.plugin],
        workspace=workspace,
        config={"sandbox": {"backend": backend, "network": network}},
    )
    out = system.call("terminal", {"command": "true"})
    assert "[exit code 0;" in out, (backend, out)
    return system


def report(title: str, times: dict[str, list[float]], base: str, unit: str, target: float) -> None:
    base_med = statistics.median(times[base])
    print(title)
    print(f"{'side':<22} {'min ' + unit:>10} {'median ' + unit:>12} {'+median':>10} {'ratio':>6}")
    for label, values in times.items():
        lo, med = min(values), statistics.median(values)
        extra = med - base_med
        note = (
            "" if label == base else (f"  (target <= +{target:g})" if extra <= target else "  (OVER target)")
        )
        print(f"{label:<22} {lo:10.2f} {med:12.2f} {extra:+10.2f} {med / base_med:6.2f}{note}")
    print()


def terminal_true(rounds: int) -> None:
    workspace = Path(tempfile.mkdtemp(prefix="hermes-bench-ws-"))
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)  # host-run files to bind and check
    sides = {"none": ("none", "on")}
    for backend in ("bwrap", "landlock"):
        if choose_backend(backend).backend is not None:
            sides[f"{backend} network on"] = (backend, "on")
            sides[f"{backend} network off"] = (backend, "off")
    systems = {label: build(b, workspace, n) for label, (b, n) in sides.items()}
    times: dict[str, list[float]] = {label: [] for label in systems}
    for _ in range(rounds):
        for label, system in systems.items():
            start = time.perf_counter()
            system.call("terminal", {"command": "true"})
            times[label].append((time.perf_counter() - start) * 1000)
    report(
        f"terminal {{'command': 'true'}} through the pipeline, {rounds} interleaved rounds",
        times,
        "none",
        "ms",
        10,
    )
    for system in systems.values():
        system.close()


def file_tool(rounds: int, number: int = 100) -> None:
    workspace = Path(tempfile.mkdtemp(prefix="hermes-bench-files-"))
    system = ToolSystem.load(
        plugins_dir=False, load_entry_points=False, plugins=[hermes_builtin.plugin], workspace=workspace
    )  # guarded: the path guard judges every path
    rule = _paths._HOST_RUN
    never = re.compile(r"(?!)")
    calls = {
        "check_path": None,
        "read_file": {"path": "src/notes.txt"},
        "write_file": {"path": "src/notes.txt", "content": "hello\n"},
    }
    assert system.call_outcome("write_file", calls["write_file"]).ok
    target = str(workspace / "src" / "notes.txt")

    def sample(tool: str, with_rule: bool) -> float:
        _paths._HOST_RUN = rule if with_rule else never
        start = time.perf_counter_ns()
        if tool == "check_path":
            for _ in range(number):
                _paths.check_path(target, "write", workspace)
        else:
            for _ in range(number):
                system.call(tool, calls[tool])
        _paths._HOST_RUN = rule
        return (time.perf_counter_ns() - start) / number / 1000

    for tool in calls:
        times: dict[str, list[float]] = {f"{tool} before": [], f"{tool} now": []}
        for r in range(rounds):
            order = list(times) if r % 2 == 0 else list(reversed(times))
            for label in order:
                times[label].append(sample(tool, label.endswith("now")))
        report(
            f"{tool} (guard on, the host-run rule off/on), {rounds} interleaved rounds of {number} calls",
            times,
            f"{tool} before",
            "us",
            50,
        )
    system.close()


def main(rounds: int = 200) -> None:
    print(f"python {sys.version.split()[0]}; hermes_core from {Path(_paths.__file__).parents[2]}\n")
    terminal_true(rounds)
    file_tool(max(20, rounds // 5))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
