"""The baseline of ``bench_mcp.py`` and ``soak_mcp.py``: the MCP SDK's own ``MCPServer`` with the same two tools.

``echo(text)`` returns its text; ``read_file(path)`` returns the text of ``path`` inside the folder given with
``--root`` (the benchmark puts there exactly the text hermes's ``read_file`` returns, so both serve the same bytes).
Run: ``python _sdk_mcp_server.py --root DIR`` (stdio) or ``... --http PORT``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer

root = Path(sys.argv[sys.argv.index("--root") + 1]) if "--root" in sys.argv else Path.cwd()
server = MCPServer("sdk-baseline", log_level="WARNING")  # as quiet as hermes: no log line per request


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def read_file(path: str) -> str:
    """The text of a file of the root folder."""
    return (root / Path(path).name).read_text(encoding="utf-8")


if __name__ == "__main__":
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        server.run("streamable-http", host="127.0.0.1", port=port)
    else:
        server.run("stdio")
