"""``hermes mcp serve`` side by side with the MCP SDK's own ``MCPServer`` (``_sdk_mcp_server.py``), both real
processes driven by the SDK's client, in both protocol eras (2025-11-25 handshake, 2026-07-28).

- **Latency**: one client calls a trivial tool (``echo``) again and again, over stdio and over HTTP; rounds
  alternate between the two servers. Target (issue 26): hermes within 1.1x of the SDK server.
- **Throughput**: 8 and 32 concurrent client sessions (each its own SDK client and HTTP connections) call
  ``read_file`` of a 100 KB page for a few seconds; the SDK server returns exactly the text hermes's ``read_file``
  returns. Rounds alternate between the servers; errors are counted; the servers' CPU per call is read from
  /proc. Target: hermes at least 0.7x the SDK server's calls per second.

Run from a non-editable install (``pip install '.[mcp]'`` into a fresh venv):
``python benchmarks/bench_mcp.py [rounds] [latency|throughput]``. Client and servers share the machine, as in the issue.
"""

from __future__ import annotations

import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
from _util import line
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

HERE = Path(__file__).resolve().parent
HERMES = str(Path(sys.executable).with_name("hermes"))
PLUGIN = """
from hermes_core import registry


def echo(text: str) -> str:
    return text


registry.register(name="echo", toolset="bench", handler=echo, parallel_safe=True, schema={
    "name": "echo", "description": "Return the text.",
    "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}})
"""
MODES = {"2025-11-25": "legacy", "2026-07-28": "auto"}


def _page(path: Path, size: int = 100_000) -> None:
    rng = random.Random(26)
    words = [
        "the",
        "quick",
        "brown",
        "fox",
        "jumps",
        "over",
        "a",
        "lazy",
        "dog",
        "while",
        "tools",
        "serve",
        "pages",
        "of",
        "text",
        "to",
        "models",
    ]
    lines: list[str] = []
    while sum(len(x) + 1 for x in lines) < size:
        lines.append(" ".join(rng.choice(words) for _ in range(14)))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


class Setup:
    """A workspace with the page, a hermes configuration and the two servers' command lines."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="hermes-bench-mcp-"))
        self.env = {**os.environ, "HERMES_HOME": str(self.dir / "home")}
        self.env.pop("HERMES_MCP_TOKEN", None)
        self.workspace = self.dir / "ws"
        self.workspace.mkdir()
        _page(self.workspace / "page.txt")
        plugins = self.dir / "plugins"
        plugins.mkdir()
        (plugins / "bench_tools.py").write_text(PLUGIN)
        config = self.dir / "config.toml"
        config.write_text("")
        self.hermes = [
            HERMES, "--config", str(config), "--plugins-dir", str(plugins), "--workspace", str(self.workspace),
            "mcp", "serve", "--toolset", "bench", "--toolset", "file",
        ]  # fmt: skip
        self.sdk_root = self.dir / "sdk"
        self.sdk_root.mkdir()
        self.sdk = [sys.executable, str(HERE / "_sdk_mcp_server.py"), "--root", str(self.sdk_root)]

    def same_text(self, text: str) -> None:
        (self.sdk_root / "page.txt").write_text(text, encoding="utf-8")


@asynccontextmanager
async def stdio(command: list[str], env: dict[str, str], mode: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=command[0], args=command[1:], env=env)
    async with Client(params, mode=mode) as client:  # type: ignore[arg-type]
        yield client


@asynccontextmanager
async def http(url: str, mode: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(60.0)) as web,
        Client(streamable_http_client(url, http_client=web), mode=mode) as client,  # type: ignore[arg-type]
    ):
        yield client


class HttpServers:
    """Both servers over HTTP for the whole run (start-up is not what is measured)."""

    def __init__(self, setup: Setup) -> None:
        self.procs: dict[str, subprocess.Popen[str]] = {}
        self.urls: dict[str, str] = {}
        hermes = subprocess.Popen(
            [*setup.hermes, "--http", "127.0.0.1:0"], env=setup.env, stderr=subprocess.PIPE, text=True,
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        self.procs["hermes"] = hermes
        while True:
            printed = hermes.stderr.readline()  # type: ignore[union-attr]
            if not printed:
                raise RuntimeError("hermes mcp serve did not start")
            found = re.search(r"(http://\S+/mcp)", printed)
            if found:
                self.urls["hermes"] = found.group(1)
                break
        port = _free_port()
        self.procs["sdk"] = subprocess.Popen(
            [*setup.sdk, "--http", str(port)], env=setup.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            text=True,
        )  # fmt: skip
        self.urls["sdk"] = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the SDK server did not start") from None
                time.sleep(0.05)

    def close(self) -> None:
        for proc in self.procs.values():
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


async def _latency_round(client: Client, calls: int) -> float:
    started = time.perf_counter_ns()
    for _ in range(calls):
        await client.call_tool("echo", {"text": "hi"})
    return (time.perf_counter_ns() - started) / calls


async def latency(setup: Setup, servers: HttpServers, rounds: int, calls: int = 100) -> None:
    print(f"\nLatency: one client, {calls} sequential echo calls per round, {rounds} rounds (us per call)")
    for transport in ("stdio", "http"):
        for version, mode in MODES.items():
            samples: dict[str, list[float]] = {"hermes": [], "sdk": []}
            if transport == "stdio":
                opened = {
                    "hermes": stdio(setup.hermes, setup.env, mode),
                    "sdk": stdio(setup.sdk, setup.env, mode),
                }
            else:
                opened = {name: http(servers.urls[name], mode) for name in ("hermes", "sdk")}
            async with opened["hermes"] as hermes, opened["sdk"] as sdk:
                clients = {"hermes": hermes, "sdk": sdk}
                for client in clients.values():
                    await _latency_round(client, calls)  # warm up
                for r in range(rounds):
                    for name in ["hermes", "sdk"] if r % 2 == 0 else ["sdk", "hermes"]:
                        samples[name].append(await _latency_round(clients[name], calls))
            _report(f"{transport} {version}", samples, "us", 1000, higher_is_better=False)


async def _load(url: str, mode: str, sessions: int, seconds: float) -> tuple[int, int]:
    """``(calls completed, errors)`` of ``sessions`` clients calling read_file for ``seconds``."""
    done = [0, 0]
    stop = anyio.Event()
    ready = [0]
    go = anyio.Event()

    async def one() -> None:
        try:
            async with http(url, mode) as client:
                await client.call_tool("read_file", {"path": "page.txt"})  # connected and warm
                ready[0] += 1
                if ready[0] == sessions:
                    go.set()
                await go.wait()
                while not stop.is_set():
                    result = await client.call_tool("read_file", {"path": "page.txt"})
                    done[1 if result.is_error else 0] += 1
        except Exception:
            done[1] += 1
            if not go.is_set():
                ready[0] += 1
                if ready[0] == sessions:
                    go.set()

    async with anyio.create_task_group() as group:
        for _ in range(sessions):
            group.start_soon(one)
        await go.wait()
        await anyio.sleep(seconds)
        stop.set()
    return done[0], done[1]


async def throughput(servers: HttpServers, rounds: int, seconds: float = 3.0) -> None:
    print(
        f"\nThroughput: read_file of a 100 KB page over HTTP, {seconds:g} s per round, {rounds} rounds (calls/s)"
    )
    for version, mode in MODES.items():
        for sessions in (8, 32):
            samples: dict[str, list[float]] = {"hermes": [], "sdk": []}
            cpu: dict[str, list[float]] = {"hermes": [], "sdk": []}
            errors = {"hermes": 0, "sdk": 0}
            for r in range(rounds):
                for name in ["hermes", "sdk"] if r % 2 == 0 else ["sdk", "hermes"]:
                    pid = servers.procs[name].pid
                    before = _cpu_ms(pid)
                    started = time.perf_counter()
                    calls, failed = await _load(servers.urls[name], mode, sessions, seconds)
                    elapsed = time.perf_counter() - started
                    samples[name].append(calls / seconds)
                    cpu[name].append((_cpu_ms(pid) - before) / max(1, calls))
                    errors[name] += failed
                    del elapsed
            label = f"{version}, {sessions} sessions"
            _report(label, samples, "calls/s", 1, higher_is_better=True)
            print(
                f"{'':38s}  server CPU per call (median): hermes {statistics.median(cpu['hermes']):.2f} ms, "
                f"sdk {statistics.median(cpu['sdk']):.2f} ms; errors: hermes {errors['hermes']}, sdk {errors['sdk']}"
            )


def _report(
    label: str, samples: dict[str, list[float]], unit: str, scale: float, *, higher_is_better: bool
) -> None:
    hermes, sdk = samples["hermes"], samples["sdk"]
    pick: Callable[[list[float]], float] = max if higher_is_better else min
    best = pick(hermes) / max(pick(sdk), 1e-9)
    middle = statistics.median(hermes) / max(statistics.median(sdk), 1e-9)
    print(line(f"  {label}: sdk", sdk, unit, scale))
    print(
        line(
            f"  {label}: hermes",
            hermes,
            unit,
            scale,
            f"   ratio hermes/sdk best {best:.2f}, median {middle:.2f}",
        )
    )


def main(rounds: int = 6, only: str | None = None) -> None:
    setup = Setup()
    served = _hermes_text(setup)
    setup.same_text(served)
    print(f"hermes read_file returns {len(served)} characters of the {os.path.getsize(setup.workspace / 'page.txt')}"
          " byte page; the SDK server returns the same text")  # fmt: skip
    servers = HttpServers(setup)
    try:
        if only in (None, "latency"):
            anyio.run(latency, setup, servers, rounds * 2)
        if only in (None, "throughput"):
            anyio.run(throughput, servers, rounds)
    finally:
        servers.close()


def _hermes_text(setup: Setup) -> str:
    async def fetch() -> str:
        async with stdio(setup.hermes, setup.env, "legacy") as client:
            result = await client.call_tool("read_file", {"path": "page.txt"})
            block: Any = result.content[0]
            return str(block.text)

    return anyio.run(fetch)


if __name__ == "__main__":
    numbers = [a for a in sys.argv[1:] if a.isdigit()]
    parts = [a for a in sys.argv[1:] if a in ("latency", "throughput")]
    main(int(numbers[0]) if numbers else 6, parts[0] if parts else None)
