"""``hermes mcp serve`` driven by the MCP SDK's own client, over stdio and streamable HTTP, as a real process.

The served system has the built-in tools and a drop-in plugin (``demo``: a picture, a long text, a tool that asks
for approval). Approvals reach the client as elicitations, in both protocol eras: a server-to-client request up to
2025-11-25 (``mode="legacy"``) and an ``InputRequiredResult`` round from 2026-07-28 (``mode="auto"`` negotiates it).
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import ElicitResult, ImageContent, TextContent

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
registry.register(name="ask", toolset="demo", handler=ask,
                  schema={{"name": "ask", "description": "Asks first.", "parameters": params(text={{"type": "string"}})}})
"""


@pytest.fixture
def served(tmp_path: Path) -> dict[str, Any]:
    """The command line and environment of a ``hermes mcp serve`` for this test."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "demo_tools.py").write_text(PLUGIN)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config = tmp_path / "config.toml"
    config.write_text("[limits]\nmax_result_chars = 2000\n[tools]\ncheck_ttl = 0.2\n")
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path), "DEMO_SWITCH": str(tmp_path / "switch")}
    env.pop("HERMES_MCP_TOKEN", None)
    base = [HERMES, "--config", str(config), "--plugins-dir", str(plugins), "--workspace", str(workspace)]
    return {
        "base": base,
        "env": env,
        "args": ["mcp", "serve", "--toolset", "demo", "--toolset", "terminal"],
        "switch": tmp_path / "switch",
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
    served: dict[str, Any], mode: str = "legacy", asker: Asker | None = None, on_message: Any = None
) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=served["base"][0], args=served["base"][1:] + served["args"], env=served["env"]
    )
    client = Client(params, mode=mode, elicitation_callback=asker, message_handler=on_message)  # type: ignore[arg-type]
    async with client:
        yield client


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def outcome_of(result: Any) -> dict[str, Any]:
    return dict(result.meta["hermes-tools/outcome"])


# -- stdio ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_list_and_call_over_stdio(served: dict[str, Any], mode: str) -> None:
    async def main() -> None:
        async with stdio_client(served, mode) as client:
            expected = "2025-11-25" if mode == "legacy" else "2026-07-28"
            assert client.protocol_version == expected
            assert client.server_info is not None and client.server_info.name == "hermes"
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == {"picture", "big", "ask", "ask_in_thread", "terminal", "process"}
            assert tools["big"].input_schema["properties"]["n"] == {"type": "integer"}
            ann = {name: tools[name].annotations for name in ("picture", "big", "ask", "terminal")}
            assert (
                ann["picture"].read_only_hint is True and ann["picture"].destructive_hint is False
            )  # parallel-safe
            assert ann["big"].read_only_hint is True and ann["big"].idempotent_hint is True  # declared
            assert (
                ann["ask"].read_only_hint is False and ann["ask"].destructive_hint is True
            )  # neither: may destroy
            assert ann["terminal"].destructive_hint is True

            result = await client.call_tool("big", {"n": 3})
            assert (result.is_error, text_of(result)) == (False, "line 0\nline 1\nline 2\n")
            assert outcome_of(result) == {"status": "ok", "error_kind": None, "truncated": False}

            result = await client.call_tool("picture", {})
            assert text_of(result) == "a red dot"
            [image] = [b for b in result.content if isinstance(b, ImageContent)]
            assert (image.mime_type, base64.b64decode(image.data)) == ("image/png", PNG)

            result = await client.call_tool("big", {"n": "three"})  # a validation error the model can act on
            assert result.is_error is True
            assert "Invalid arguments" in text_of(result) and "'n'" in text_of(result)
            assert outcome_of(result)["error_kind"] == "invalid_arguments"

            result = await client.call_tool(
                "read_file", {"path": "x"}
            )  # a built-in this server does not offer
            assert result.is_error is True and "not enabled" in text_of(result)

            result = await client.call_tool(
                "big", {"n": 5000}
            )  # a large result is cut by the pipeline's limit
            text = text_of(result)
            assert result.is_error is False and outcome_of(result)["truncated"] is True
            assert len(text) <= 2000 and "characters cut from the middle of this result" in text
            assert text.startswith("line 0\n") and text.rstrip().endswith("line 4999")

    anyio.run(main)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_an_approval_is_asked_of_the_client_by_elicitation(served: dict[str, Any], mode: str) -> None:
    async def main() -> None:
        asker = Asker("once")
        async with stdio_client(served, mode, asker) as client:
            result = await client.call_tool("ask", {"text": "hi"})
            assert (result.is_error, text_of(result)) == (False, "approved hi")
            assert len(asker.questions) == 1 and "the demo tool asks every time" in asker.questions[0]
            assert "ask hi" in asker.questions[0]  # the exact subject
            await client.call_tool("ask", {"text": "hi"})  # "once" is not remembered
            assert len(asker.questions) == 2
            result = await client.call_tool("ask_in_thread", {"text": "t"})
            assert text_of(result) == "approved in a thread"
            assert "asked from a thread of the tool" in asker.questions[2]
            asker.answer = "deny"
            result = await client.call_tool("ask", {"text": "hi"})
            assert result.is_error is True and "Denied" in text_of(result)
            assert outcome_of(result) == {"status": "denied", "error_kind": "approval", "truncated": False}
            assert len(asker.questions) == 4

    anyio.run(main)


def test_a_session_answer_is_remembered_for_the_same_action_only(served: dict[str, Any]) -> None:
    async def main() -> None:
        asker = Asker("session")
        async with stdio_client(served, "legacy", asker) as client:
            for _ in range(3):
                assert text_of(await client.call_tool("ask", {"text": "same"})) == "approved same"
            assert len(asker.questions) == 1
            assert text_of(await client.call_tool("ask", {"text": "other"})) == "approved other"
            assert len(asker.questions) == 2

    anyio.run(main)


def test_a_client_that_cannot_elicit_is_denied_and_told_why(served: dict[str, Any]) -> None:
    async def main() -> None:
        async with stdio_client(served, "legacy", None) as client:
            result = await client.call_tool("ask", {"text": "hi"})
            assert result.is_error is True
            assert "Denied" in text_of(result)
            assert "did not declare elicitation support" in text_of(result)

    anyio.run(main)


def test_a_dangerous_command_goes_through_the_guard_and_the_client_decides(served: dict[str, Any]) -> None:
    async def main() -> None:
        asker = Asker("deny")
        async with stdio_client(served, "legacy", asker) as client:
            result = await client.call_tool("terminal", {"command": "git push --force"})
            assert outcome_of(result)["status"] == "denied"
            assert "force-push" in asker.questions[0] and "git push --force" in asker.questions[0]
            asker.answer = "once"
            result = await client.call_tool("terminal", {"command": "git push --force"})
            assert outcome_of(result)["status"] == "ok", text_of(result)
            assert "not a git repository" in text_of(result)  # it ran, and failed harmlessly
            harmless = await client.call_tool("terminal", {"command": "echo fine"})
            assert "fine" in text_of(harmless) and len(asker.questions) == 2

    anyio.run(main)


def test_clients_are_told_when_the_tool_list_changes(served: dict[str, Any]) -> None:
    async def main() -> None:
        changed = anyio.Event()

        async def on_message(message: Any) -> None:
            if getattr(message, "method", None) == "notifications/tools/list_changed":
                changed.set()

        async with stdio_client(served, "legacy", on_message=on_message) as client:
            tools_capability = client.server_capabilities.tools
            assert tools_capability is not None and tools_capability.list_changed is True
            assert "switched" not in {t.name for t in (await client.list_tools()).tools}
            served["switch"].write_text("")  # the tool's check now passes
            with anyio.fail_after(20):
                await changed.wait()
            assert "switched" in {t.name for t in (await client.list_tools()).tools}
            assert text_of(await client.call_tool("switched", {})) == "on"

    anyio.run(main)


def test_an_unknown_toolset_is_a_usage_error(served: dict[str, Any]) -> None:
    proc = subprocess.run(
        [*served["base"], "mcp", "serve", "--toolset", "no-such-set"],
        env=served["env"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2 and "unknown toolset 'no-such-set'" in proc.stderr


# -- HTTP ----------------------------------------------------------------------------------------------


@pytest.fixture
def http_server(served: dict[str, Any], request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """``hermes mcp serve --http ADDRESS`` (``request.param``): yields the URL and the stderr line it printed."""
    address, token = request.param
    env = dict(served["env"])
    if token:
        env["HERMES_MCP_TOKEN"] = token
    proc = subprocess.Popen(
        [*served["base"], *served["args"], "--http", address],
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
                yield found.group(1), "".join(lines)
                break
    finally:
        proc.terminate()
        proc.wait(10)


@asynccontextmanager
async def http_client(url: str, token: str | None, mode: str, asker: Asker | None) -> AsyncIterator[Client]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with httpx2.AsyncClient(headers=headers) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, elicitation_callback=asker) as client:  # type: ignore[arg-type]
            yield client


@pytest.mark.parametrize("http_server", [("127.0.0.1:0", None)], indirect=True)
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_list_call_and_approve_over_http(http_server: tuple[str, str], mode: str) -> None:
    url, _ = http_server
    assert url.startswith("http://127.0.0.1:")

    async def main() -> None:
        asker = Asker("once")
        async with http_client(url, None, mode, asker) as client:
            assert {t.name for t in (await client.list_tools()).tools} >= {"picture", "big", "ask"}
            result = await client.call_tool("big", {"n": 2})
            assert text_of(result) == "line 0\nline 1\n"
            result = await client.call_tool("ask", {"text": "over http"})
            assert text_of(result) == "approved over http" and len(asker.questions) == 1
            result = await client.call_tool("big", {"n": "x"})
            assert result.is_error is True and outcome_of(result)["error_kind"] == "invalid_arguments"
            result = await client.call_tool("big", {"n": 5000})
            assert outcome_of(result)["truncated"] is True and len(text_of(result)) <= 2000
        async with http_client(url, None, mode, Asker("deny")) as client:
            result = await client.call_tool("ask", {"text": "over http"})
            assert outcome_of(result)["status"] == "denied"

    anyio.run(main)


def _post_initialize(url: str, token: str | None) -> int:
    import httpx2

    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    return int(httpx2.post(url, json=body, headers=headers, timeout=10).status_code)


@pytest.mark.parametrize("http_server", [("127.0.0.1:0", "test-token-123")], indirect=True)
def test_a_token_given_on_loopback_is_required(http_server: tuple[str, str]) -> None:
    url, _ = http_server
    assert _post_initialize(url, None) == 401
    assert _post_initialize(url, "wrong") == 401
    assert _post_initialize(url, "test-token-123") == 200

    async def main() -> None:
        async with http_client(url, "test-token-123", "legacy", None) as client:
            assert text_of(await client.call_tool("big", {"n": 1})) == "line 0\n"

    anyio.run(main)


@pytest.mark.parametrize("http_server", [("0.0.0.0:0", None)], indirect=True)
def test_off_loopback_a_token_is_generated_printed_and_required(http_server: tuple[str, str]) -> None:
    url, printed = http_server
    token = re.search(r"bearer token for this run: (\S+)", printed)
    assert token is not None, printed
    port = url.rsplit(":", 1)[1]
    local = f"http://127.0.0.1:{port}"  # reached over loopback: the test sends nothing off this machine
    assert _post_initialize(local, None) == 401
    assert _post_initialize(local, token.group(1)) == 200


def test_http_on_another_address_without_token_cannot_be_forced_open() -> None:
    from hermes_core.mcp.server import McpServer, is_loopback

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.0.2.1")
    from hermes_core import ToolSystem

    with ToolSystem.load(plugins_dir=False, load_entry_points=False) as system:
        server = McpServer(system)
        with pytest.raises(ValueError, match="needs a bearer token"):
            anyio.run(lambda: server.serve_http("0.0.0.0", 0))


@pytest.mark.parametrize("http_server", [("127.0.0.1:0", "tok-456")], indirect=True)
def test_hermes_as_the_client_of_hermes_serve(http_server: tuple[str, str]) -> None:
    """Both directions at once: annotations and attachments survive two pipelines; a wrong token is a 401
    whose status and hint reach the status report."""
    from mcp_helpers import eventually, load

    url, _ = http_server
    system = load(
        {
            "wrong": {"url": url, "headers": {"Authorization": "Bearer nope"}, "prefix": "w_"},
            "right": {"url": url, "headers": {"Authorization": "Bearer tok-456"}},
        },
        {"max_backoff": 5},
    )
    try:
        assert eventually(lambda: system.mcp_status()["right"]["state"] == "ready", 30)
        assert eventually(lambda: system.mcp_status()["wrong"]["error"] is not None, 30)
        error = system.mcp_status()["wrong"]["error"]
        assert error.startswith("HTTP 401 Unauthorized: the server wants credentials"), error
        assert "[mcp.servers.wrong] headers" in error
        assert system.call("big", {"n": 2}) == "line 0\nline 1\n"
        assert system.registry["big"].annotations == {
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
        }
        picture = system.call_outcome("picture")
        assert picture.attachments[0].data == PNG
        denied = system.call_outcome("ask", {"text": "x"})  # derived destructiveHint: our side asks first
        assert (denied.status, denied.error_kind) == ("denied", "approval")
    finally:
        system.close()
