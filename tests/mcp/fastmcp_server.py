"""A third-party MCP server written with FastMCP (``pip install fastmcp``), run over stdio by the tests.

``forget(name)`` carries no annotations at all, as FastMCP tools do unless their author adds them, so by the
MCP specification's defaults it may destroy data; ``recall(name)`` says it only reads.
"""

from __future__ import annotations

from fastmcp import FastMCP

server = FastMCP("notes")


@server.tool
def forget(name: str) -> str:
    """Forget the note called ``name``."""
    return f"forgot {name}"


@server.tool(annotations={"readOnlyHint": True})
def recall(name: str) -> str:
    """Recall the note called ``name``."""
    return f"the note {name}"


if __name__ == "__main__":
    server.run(show_banner=False)
