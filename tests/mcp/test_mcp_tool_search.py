"""``hermes mcp serve`` with a catalog past the definitions budget, driven by the MCP SDK's client over stdio.

tools/list gives the core tools and ``tool_search``; a search loads tools for this connection, the client is told
(``notifications/tools/list_changed``), lists again and finds them, and calls one through the pipeline.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import TextContent

HERMES = str(Path(sys.executable).with_name("hermes"))
CATALOG = Path(__file__).parents[2] / "benchmarks" / "catalog" / "tools.json"

PLUGIN = f"""
import json

from hermes_core import registry


def echo(**arguments):
    return json.dumps({{"echo": arguments}}, sort_keys=True)


with open({str(CATALOG)!r}, encoding="utf-8") as f:
    TOOLS = [t for t in json.load(f)["tools"] if t["source"]["registry"] != "builtin"]

for tool in TOOLS:
    schema = {{"name": tool["name"], "description": tool["description"], "parameters": tool["parameters"]}}
    registry.register(name=tool["name"], toolset="catalog", schema=schema, handler=echo)
"""


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def test_a_search_loads_tools_for_the_connection_and_the_client_is_told(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "catalog_tools.py").write_text(PLUGIN)
    config = tmp_path / "config.toml"
    config.write_text('[tools]\nsearch_core = ["file"]\nsearch_budget = 3000\n')
    workspace = tmp_path / "ws"
    workspace.mkdir()
    args = ["--config", str(config), "--plugins-dir", str(plugins), "--workspace", str(workspace)]
    args += ["mcp", "serve", "--toolset", "catalog", "--toolset", "file"]
    params = StdioServerParameters(command=HERMES, args=args, env=dict(os.environ))

    async def main() -> None:
        changed = anyio.Event()

        async def on_message(message: Any) -> None:
            if getattr(message, "method", None) == "notifications/tools/list_changed":
                changed.set()

        async with Client(params, mode="legacy", message_handler=on_message) as client:  # type: ignore[arg-type]
            first = {t.name for t in (await client.list_tools()).tools}
            assert {"tool_search", "read_file"} <= first
            assert "kubectl_get" not in first and len(first) < 20
            found = await client.call_tool("tool_search", {"query": "show the pods in my kubernetes cluster"})
            assert "kubectl_get" in [t["name"] for t in json.loads(text_of(found))["tools"]]
            with anyio.fail_after(20):
                await changed.wait()
            after = {t.name for t in (await client.list_tools()).tools}
            assert "kubectl_get" in after and first <= after
            result = await client.call_tool("kubectl_get", {"resourceType": "pods"})
            assert json.loads(text_of(result)) == {"echo": {"resourceType": "pods"}}
            blind = await client.call_tool("git_status", {"repo_path": "/tmp"})  # exact name, never searched
            assert json.loads(text_of(blind)) == {"echo": {"repo_path": "/tmp"}}
            assert "git_status" in {t.name for t in (await client.list_tools()).tools}

    anyio.run(main)
