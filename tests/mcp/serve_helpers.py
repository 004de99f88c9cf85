"""Shared pieces of the ``hermes mcp serve`` tests: the served system (a drop-in plugin with a picture, a long
text and tools that ask), the SDK clients over stdio and HTTP, and readers of their results."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import ElicitResult, TextContent

HERMES = str(Path(sys.executable).with_name("hermes"))
PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)

PLUGIN = f"""
from hermes_core import Attachment, ToolOutput, registry

import os

PNG = {PNG!r}


def picture():
    return ToolOutput("a red dot", (Attachment("image/png", PNG, "image"),))


def big(n: int):
    return "".join(f"line {{i}}\\n" for i in range(n))


def ask(text: str, context):
    context.request_approval(f"ask {{text}}", "the demo tool asks every time")
    return f"approved {{text}}"


def ask_in_thread(text: str, context):
    import threading

    box = []

    def work():  # a thread of the tool's own, as execute_code runs the calls of its script
        try:
            context.request_approval(f"thread {{text}}", "asked from a thread of the tool")
            box.append("approved in a thread")
        except Exception as err:
            box.append(str(err))

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    return box[0]


def patient(path: str, context):
    import time

    with open(path, "a") as out:
        try:
            for _ in range(2000):  # up to 100 s, unless cancelled (the handler is interrupted then)
                out.write(".")
                out.flush()
                time.sleep(0.05)
        finally:  # clean-up runs on the way out, and the context says why
            if context.cancelled:
                out.write("stopped")
    return "done"


def switch_is_on():
    return os.path.exists(os.environ["DEMO_SWITCH"])


def switched():
    return "on"


def params(**props):
    return {{"type": "object", "properties": props, "required": list(props)}}


registry.register(name="picture", toolset="demo", handler=picture, parallel_safe=True,
                  schema={{"name": "picture", "description": "A picture.", "parameters": params()}})
registry.register(name="big", toolset="demo", handler=big, annotations={{"readOnlyHint": True, "idempotentHint": True}},
                  schema={{"name": "big", "description": "n lines.", "parameters": params(n={{"type": "integer"}})}})
registry.register(name="ask_in_thread", toolset="demo", handler=ask_in_thread,
                  schema={{"name": "ask_in_thread", "description": "Asks.", "parameters": params(text={{"type": "string"}})}})
registry.register(name="switched", toolset="demo", handler=switched, check_fn=switch_is_on,
                  schema={{"name": "switched", "description": "There when the switch is.", "parameters": params()}})
registry.register(name="patient", toolset="demo", handler=patient,
                  schema={{"name": "patient", "description": "Loops until cancelled.", "parameters": params(path={{"type": "string"}})}})
registry.register(name="ask", toolset="demo", handler=ask,
                  schema={{"name": "ask", "description": "Asks first.", "parameters": params(text={{"type": "string"}})}})
"""


def make_served(
    tmp_path: Path, config: str = "", toolsets: tuple[str, ...] = ("demo", "terminal")
) -> dict[str, Any]:
    """The command line and environment of a ``hermes mcp serve`` for one test (``config``: more TOML)."""
    plugins = tmp_path / "plugins"
    plugins.mkdir(exist_ok=True)
    (plugins / "demo_tools.py").write_text(PLUGIN)
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    config_file = tmp_path / "config.toml"
    config_file.write_text("[limits]\nmax_result_chars = 2000\n[tools]\ncheck_ttl = 0.2\n" + config)
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path), "DEMO_SWITCH": str(tmp_path / "switch")}
    env["HERMES_HOME"] = str(tmp_path / "home")
    env.pop("HERMES_MCP_TOKEN", None)
    env.pop("HERMES_MCP_SERVE_CHAIN", None)
    base = [
        HERMES,
        "--config",
        str(config_file),
        "--plugins-dir",
        str(plugins),
        "--workspace",
        str(workspace),
    ]
    args = ["mcp", "serve"]
    for toolset in toolsets:
        args += ["--toolset", toolset]
    return {
        "base": base,
        "env": env,
        "args": args,
        "switch": tmp_path / "switch",
        "workspace": workspace,
        "config": config_file,
    }


class Asker:
    """An elicitation callback that answers every approval with ``answer`` and remembers the questions."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.questions: list[str] = []

    async def __call__(self, context: Any, params: Any) -> ElicitResult:
        self.questions.append(params.message)
        assert params.requested_schema["properties"]["decision"]["enum"] == ["once", "session", "deny"]
        return ElicitResult(action="accept", content={"decision": self.answer})


@asynccontextmanager
async def stdio_client(
    served: dict[str, Any],
    mode: str = "legacy",
    asker: Asker | None = None,
    on_message: Any = None,
    errlog: Any = None,
) -> AsyncIterator[Client]:
    """The SDK's client on a ``hermes mcp serve`` it starts over stdio (its stderr to ``errlog``)."""
    from mcp.client.stdio import stdio_client as transport

    params = StdioServerParameters(
        command=served["base"][0], args=served["base"][1:] + served["args"], env=served["env"]
    )
    streams = transport(params, errlog=errlog) if errlog is not None else transport(params)
    client = Client(streams, mode=mode, elicitation_callback=asker, message_handler=on_message)  # type: ignore[arg-type]
    async with client:
        yield client


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def outcome_of(result: Any) -> dict[str, Any]:
    return dict(result.meta["hermes-tools/outcome"])


@contextmanager
def serving_http(
    served: dict[str, Any],
    address: str = "127.0.0.1:0",
    token: str | None = None,
    extra: tuple[str, ...] = (),
) -> Iterator[tuple[str, str, subprocess.Popen[str]]]:
    """``hermes mcp serve --http ADDRESS``: yields the URL, the stderr lines it printed and the process."""
    env = dict(served["env"])
    if token:
        env["HERMES_MCP_TOKEN"] = token
    proc = subprocess.Popen(
        [*served["base"], *served["args"], "--http", address, *extra],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = []
        while True:
            line = proc.stderr.readline()  # type: ignore[union-attr]
            if not line:
                raise RuntimeError(f"hermes mcp serve exited: {''.join(lines)}")
            lines.append(line)
            found = re.search(r"serving \d+ tools at (http://\S+/mcp)", line)
            if found:
                yield found.group(1), "".join(lines), proc
                break
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@asynccontextmanager
async def http_client(url: str, token: str | None, mode: str, asker: Asker | None) -> AsyncIterator[Client]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with httpx2.AsyncClient(headers=headers) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, elicitation_callback=asker) as client:  # type: ignore[arg-type]
            yield client
