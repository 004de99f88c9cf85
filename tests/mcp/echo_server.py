"""A small real MCP server for the tests: ``python echo_server.py`` (stdio) or ``--http PORT [--token T]``.

Tools: ``echo(text)``, ``add(a, b)``, ``fail(message)`` (a tool error), ``sleep(seconds)``, ``pid()``, ``header(name)`` (an HTTP
request header), ``pic.ture()`` (text and an image), ``grow()`` (adds ``triple`` and tells the client the tool
list changed), ``crash()`` (the process exits).
"""

from __future__ import annotations

import base64
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("echo-demo", version="1.2.3")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def fail(message: str = "it broke") -> str:
    """Always fail with ``message`` (a deliberate tool error: the client sees the text)."""
    raise ToolError(message)


@server.tool()
async def sleep(seconds: float) -> str:
    """Wait, then say so."""
    import anyio

    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def header(name: str, ctx: Context) -> str:
    """The value of one HTTP request header (empty over stdio)."""
    headers = ctx.headers or {}
    return str(headers.get(name.lower(), ""))


@server.tool(name="pic.ture")
def picture() -> list[object]:
    """A caption and a tiny image (its name holds a dot, which some providers refuse)."""
    from mcp.types import ImageContent, TextContent

    data = base64.b64encode(b"\x89PNG" + bytes(96)).decode()
    return [TextContent(text="a caption"), ImageContent(data=data, mime_type="image/png")]


def triple(n: int) -> int:
    """Three times n."""
    return 3 * n


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the ``triple`` tool and notify the client."""
    server.add_tool(triple)
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.tool()
def crash() -> str:
    """Exit the server process at once, mid-session."""
    sys.stdout.flush()
    os._exit(3)


def main(argv: list[str]) -> None:
    if "--http" in argv:
        port = int(argv[argv.index("--http") + 1])
        server.run("streamable-http", host="127.0.0.1", port=port)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main(sys.argv[1:])
