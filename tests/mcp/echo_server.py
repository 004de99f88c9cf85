"""A small real MCP server for the tests: ``python echo_server.py`` (stdio) or ``--http PORT [--token T]``.

Tools: ``echo(text)``, ``add(a, b)``, ``fail(message)`` (a tool error), ``sleep(seconds)``, ``pid()``, ``header(name)`` (an HTTP
request header), ``pic.ture()`` (text and an image), ``grow()`` (adds ``triple`` and tells the client the tool
list changed), ``crash()`` (the process exits), ``working(seconds, every)`` (silent but for progress notifications),
``publish(name)`` (adds the resource ``note://NAME`` and says the resource list changed),
``wipe(target)`` (annotated destructive); the others are annotated read-only or harmless, ``files()`` (a JSON text blob and a binary blob), ``read_file(path)``
(a name the built-ins own), ``batch()`` (runs only as a task: ``taskSupport: required``).

``--refuse-if PATH``: exit at once while PATH exists (a server that is down, or not up yet).
"""

from __future__ import annotations

import base64
import os
import sys

if "--refuse-if" in sys.argv and os.path.exists(sys.argv[sys.argv.index("--refuse-if") + 1]):
    sys.exit("refusing to start: the down-flag file exists")  # before the heavy imports: a quick refusal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resources import TextResource
from mcp.types import ToolAnnotations, ToolExecution


class EchoServer(MCPServer):
    async def list_tools(self) -> list:  # type: ignore[type-arg]
        tools = await super().list_tools()
        # MCPServer has no way to declare taskSupport: mark the one tool that needs it here
        return [
            t.model_copy(update={"execution": ToolExecution(task_support="required")})
            if t.name == "batch"
            else t
            for t in tools
        ]


server = EchoServer("echo-demo", version="1.2.3")
READ_ONLY = ToolAnnotations(
    read_only_hint=True
)  # most tools here only read; MCP's default would be destructive
HARMLESS = ToolAnnotations(read_only_hint=False, destructive_hint=False)


@server.tool(annotations=READ_ONLY)
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool(annotations=READ_ONLY)
def fail(message: str = "it broke") -> str:
    """Always fail with ``message`` (a deliberate tool error: the client sees the text)."""
    raise ToolError(message)


@server.tool(annotations=READ_ONLY)
async def sleep(seconds: float) -> str:
    """Wait, then say so."""
    import anyio

    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool(annotations=READ_ONLY)
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool(annotations=READ_ONLY)
def header(name: str, ctx: Context) -> str:
    """The value of one HTTP request header (empty over stdio)."""
    headers = ctx.headers or {}
    return str(headers.get(name.lower(), ""))


@server.tool(name="pic.ture", annotations=READ_ONLY)
def picture() -> list[object]:
    """A caption and a tiny image (its name holds a dot, which some providers refuse)."""
    from mcp.types import ImageContent, TextContent

    data = base64.b64encode(b"\x89PNG" + bytes(96)).decode()
    return [TextContent(text="a caption"), ImageContent(data=data, mime_type="image/png")]


def triple(n: int) -> int:
    """Three times n."""
    return 3 * n


@server.tool(annotations=HARMLESS)
async def grow(ctx: Context) -> str:
    """Add the ``triple`` tool and notify the client."""
    server.add_tool(triple, annotations=READ_ONLY)
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.tool(annotations=HARMLESS)
def crash() -> str:
    """Exit the server process at once, mid-session."""
    sys.stdout.flush()
    os._exit(3)


@server.tool(annotations=READ_ONLY)
async def working(seconds: float, every: float, ctx: Context) -> str:
    """Work for ``seconds``, sending a progress notification every ``every`` seconds and nothing else."""
    import anyio

    steps = max(1, int(seconds / every))
    for step in range(steps):
        await anyio.sleep(every)
        await ctx.report_progress(step + 1, steps)
    return f"worked {seconds} s"


@server.tool(annotations=ToolAnnotations(destructive_hint=True, read_only_hint=False))
def wipe(target: str) -> str:
    """Pretend to delete ``target`` (annotated destructive)."""
    return f"wiped {target}"


@server.tool(annotations=READ_ONLY)
def files() -> list[object]:
    """A JSON file as a base64 blob (text) and a PDF as a base64 blob (binary)."""
    from mcp.types import BlobResourceContents, EmbeddedResource

    text = base64.b64encode(b'{"ok": true}').decode()
    pdf = base64.b64encode(b"%PDF-1.4 fake").decode()
    return [
        EmbeddedResource(
            resource=BlobResourceContents(uri="file:///a.json", blob=text, mime_type="application/json")
        ),
        EmbeddedResource(
            resource=BlobResourceContents(uri="file:///b.pdf", blob=pdf, mime_type="application/pdf")
        ),
    ]


@server.tool(annotations=READ_ONLY)
def read_file(path: str) -> str:
    """The server's own read_file (the built-ins have one too)."""
    return f"remote read of {path}"


@server.tool(annotations=HARMLESS)
async def publish(name: str, ctx: Context) -> str:
    """Offer a new resource ``note://NAME`` and tell the client the resource list changed."""
    server.add_resource(TextResource(uri=f"note://{name}", name=name, text=f"the note {name}"))
    await ctx.session.send_resource_list_changed()
    return f"published {name}"


@server.resource("note://first")
def first_note() -> str:
    """The first note."""
    return "the first note"


@server.tool(annotations=READ_ONLY)
def batch() -> str:
    """Only runs as a task."""
    return "batched"


def main(argv: list[str]) -> None:
    if "--http" in argv:
        port = int(argv[argv.index("--http") + 1])
        server.run("streamable-http", host="127.0.0.1", port=port)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main(sys.argv[1:])
