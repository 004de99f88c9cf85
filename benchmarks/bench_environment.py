"""``terminal {"command": "true"}`` in a warm local session (the session shell: state restored before and saved after
the command) against the same sandboxed call without state, and a direct ``subprocess.run``; then the file tools'
way to a file through the environment (guard, resolve beneath the roots, open) against the way before it
(guard, then open with no link allowed from ``/``).

Targets: local with state at most +5 ms over local without (issue 20); a file tool's open within +50 us of
before (issue 19). "Without state" is a tool registered here that does what ``terminal`` did before sessions
remembered: the guard, then ``bash -c`` in the session's sandbox with the same limits, through the same pipeline.
Each sandbox backend is measured; the calls alternate round after round (interleaved), so machine noise hits
every side alike. Prints min and median, the difference and the ratio. Run from a non-editable install:
``python benchmarks/bench_environment.py [rounds]``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HERMES_HOME", tempfile.mkdtemp(prefix="hermes-bench-"))

import hermes_builtin.plugin
from hermes_core import CallContext, ToolSystem, hookimpl
from hermes_core.sandbox import Limits, choose_backend, sandbox_for


def stateless(command: str, *, context: CallContext) -> str:
    """The terminal of before: the command guard, then one bash per command in the session's sandbox, nothing
    carried over."""
    context.guard_command(command)
    result = sandbox_for(context).run(
        ["bash", "-c", command],
        timeout=180,
        tool="terminal",
        limits=Limits(memory_mb=4096, max_output_bytes=40_000),
    )
    return f"{result.output}\n[exit code {result.exit_code}; {result.duration:.2f}s]"


class Baseline:
    @hookimpl
    def register_tools(self, registry: Any) -> None:
        registry.register(
            name="stateless_terminal",
            toolset="bench",
            handler=stateless,
            schema={
                "name": "stateless_terminal",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
            },
        )


def build(backend: str, workspace: Path) -> ToolSystem:
    system = ToolSystem.load(
        plugins_dir=False,
        load_entry_points=False,
        plugins=[hermes_builtin.plugin, Baseline()],
        workspace=workspace,
        config={"sandbox": {"backend": backend}},
    )
    for tool in ("terminal", "stateless_terminal"):  # warm: the session, its sandbox and its shell exist
        out = system.call(tool, {"command": "true"})
        assert "[exit code 0;" in out, (backend, tool, out)
    return system


def stats(samples: list[float]) -> tuple[float, float]:
    return min(samples), statistics.median(samples)


def main(rounds: int = 200) -> None:
    workspace = Path(tempfile.mkdtemp(prefix="hermes-bench-ws-"))
    backends = [b for b in ("bwrap", "landlock") if choose_backend(b).backend is not None]
    systems = {b: build(b, workspace) for b in backends}
    times: dict[str, list[float]] = {"subprocess.run": []}
    for backend in backends:
        times[f"{backend} without state"] = []
        times[f"{backend} with state"] = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run(["bash", "-c", "true"], capture_output=True, check=True)
        times["subprocess.run"].append((time.perf_counter() - start) * 1000)
        for backend, system in systems.items():
            for tool, label in (("stateless_terminal", "without state"), ("terminal", "with state")):
                start = time.perf_counter()
                system.call(tool, {"command": "true"})
                times[f"{backend} {label}"].append((time.perf_counter() - start) * 1000)
    print(f"terminal {{'command': 'true'}} in a warm local session, {rounds} interleaved rounds")
    print(f"{'':<24} {'min ms':>8} {'median ms':>10}")
    for label, samples in times.items():
        lo, med = stats(samples)
        print(f"{label:<24} {lo:8.2f} {med:10.2f}")
    for backend in backends:
        base_lo, base_med = stats(times[f"{backend} without state"])
        lo, med = stats(times[f"{backend} with state"])
        verdict = "within" if med - base_med <= 5 else "OVER"
        print(
            f"{backend}: state costs {lo - base_lo:+.2f} ms (min), {med - base_med:+.2f} ms (median); "
            f"ratio {lo / base_lo:.2f} / {med / base_med:.2f} ({verdict} the +5 ms target)"
        )
    files(next(iter(systems.values())), workspace, rounds * 20)
    for system in systems.values():
        system.close()


def files(system: ToolSystem, workspace: Path, rounds: int) -> None:
    """The way to a file's bytes, with a real call context: through the environment, and as before it."""
    from hermes_builtin.tools.files._where import locate
    from hermes_core.fileio import open_nofollow

    (workspace / "sub").mkdir(exist_ok=True)
    (workspace / "sub" / "file.txt").write_text("hello\n" * 50)
    context = CallContext(
        call_id="bench",
        session_id=system.session_id,
        workspace=system.workspace,
        tool_name="read_file",
        host=system.host,
        guard=system.guard,
    )

    def before() -> bytes:
        path = context.guard_path("sub/file.txt", "read")
        fd = open_nofollow(path, os.O_RDONLY)
        with os.fdopen(fd, "rb") as fh:
            return fh.read()

    def now() -> bytes:
        with locate(context, "sub/file.txt", "read").open() as fh:
            return fh.read()

    assert before() == now()
    times: dict[str, list[float]] = {"guard + open_nofollow": [], "environment": []}
    for _ in range(rounds):
        for label, way in (("guard + open_nofollow", before), ("environment", now)):
            start = time.perf_counter()
            way()
            times[label].append((time.perf_counter() - start) * 1e6)
    print(f"\nopening a file for the file tools, {rounds} interleaved rounds")
    print(f"{'':<24} {'min us':>8} {'median us':>10}")
    for label, samples in times.items():
        lo, med = stats(samples)
        print(f"{label:<24} {lo:8.1f} {med:10.1f}")
    base_lo, base_med = stats(times["guard + open_nofollow"])
    lo, med = stats(times["environment"])
    verdict = "within" if med - base_med <= 50 else "OVER"
    print(
        f"the environment's walls cost {lo - base_lo:+.1f} us (min), {med - base_med:+.1f} us (median); "
        f"ratio {lo / base_lo:.2f} / {med / base_med:.2f} ({verdict} the +50 us target)"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
