"""A soak of ``hermes mcp serve --http`` with session churn, in both protocol eras, and the server's memory.

Client sessions come and go for ``minutes`` minutes (default 10): each one connects (alternately 2025-11-25 and
2026-07-28), lists the tools, reads a 100 KB page, lists its background processes (which gives the session state
of its own) and its todo list, and leaves. The server's RSS is sampled every 5 s. Target (issue 26): the RSS at the
end within 10% of the RSS after the first minute, with no error. The SDK's own ``MCPServer`` gets the same churn
(``--baseline``, its two tools only) for comparison.

Sessions of the 2026-07-28 era end when they idle out, so the soak sets ``[mcp.serve] session_idle_seconds = 20``
(the default is 30 minutes: a longer soak than that shows the same). Not part of the test suite.
Run from a non-editable install: ``python benchmarks/soak_mcp.py [minutes] [--baseline]``.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import anyio
from bench_mcp import HttpServers, Setup, http

WORKERS = 6


def _rss_mb(pid: int) -> float:
    for row in Path(f"/proc/{pid}/status").read_text().splitlines():
        if row.startswith("VmRSS:"):
            return int(row.split()[1]) / 1024
    return 0.0


async def _churn(
    url: str, minutes: float, hermes: bool, pid: int
) -> tuple[list[tuple[float, float]], int, int]:
    """Session churn until the time is up: ``(samples of (minute, RSS MB), sessions, errors)``."""
    end = time.monotonic() + minutes * 60
    started = time.monotonic()
    counts = [0, 0]
    samples: list[tuple[float, float]] = []

    async def worker(number: int) -> None:
        mode_of = ("legacy", "auto")
        turn = number
        while time.monotonic() < end:
            turn += 1
            try:
                async with http(url, mode_of[turn % 2]) as client:
                    await client.list_tools()
                    read = await client.call_tool("read_file", {"path": "page.txt"})
                    failed = read.is_error
                    if hermes:
                        for arguments in ({"action": "list"},):
                            failed |= (await client.call_tool("process", arguments)).is_error
                            failed |= (await client.call_tool("todo", arguments)).is_error
                    else:
                        failed |= (await client.call_tool("echo", {"text": "hi"})).is_error
                counts[0] += 1
                counts[1] += int(failed)
            except Exception as err:
                counts[1] += 1
                print(f"error: {type(err).__name__}: {err}", file=sys.stderr)

    async def sample() -> None:
        while time.monotonic() < end:
            samples.append(((time.monotonic() - started) / 60, _rss_mb(pid)))
            await anyio.sleep(5)

    async with anyio.create_task_group() as group:
        group.start_soon(sample)
        for number in range(WORKERS):
            group.start_soon(worker, number)
    return samples, counts[0], counts[1]


def main(minutes: float, baseline: bool) -> None:
    setup = Setup()
    (setup.dir / "config.toml").write_text("[mcp.serve]\nsession_idle_seconds = 20\n")
    setup.hermes = [*setup.hermes, "--toolset", "terminal", "--toolset", "todo"]
    setup.same_text((setup.workspace / "page.txt").read_text())
    servers = HttpServers(setup)
    name = "sdk" if baseline else "hermes"
    pid = servers.procs[name].pid
    try:
        samples, sessions, errors = anyio.run(_churn, servers.urls[name], minutes, not baseline, pid)
    finally:
        servers.close()
    after_one = [mb for minute, mb in samples if 1.0 <= minute < 1.25] or [samples[0][1]]
    last = [mb for minute, mb in samples if minute >= minutes - 0.25] or [samples[-1][1]]
    reference, final = statistics.median(after_one), statistics.median(last)
    print(
        f"{name}: {sessions} sessions in {minutes:g} min ({sessions / (minutes * 60):.1f}/s), {errors} errors"
    )
    for minute in range(int(minutes) + 1):
        near = [mb for m, mb in samples if minute <= m < minute + 1]
        if near:
            print(f"  minute {minute:2d}: RSS {statistics.median(near):7.1f} MB")
    print(
        f"RSS after minute one {reference:.1f} MB, at the end {final:.1f} MB: {final / reference:.3f}x (target <= 1.10)"
    )


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main(float(args[0]) if args else 10.0, "--baseline" in sys.argv)
