"""``hermes mcp serve`` driven by the MCP SDK's own client, over stdio and streamable HTTP, as a real process.

The served system has the built-in tools and a drop-in plugin (``demo``: a picture, a long text, a tool that asks
for approval). Approvals reach the client as elicitations, in both protocol eras: a server-to-client request up to
2025-11-25 (``mode="legacy"``) and an ``InputRequiredResult`` round from 2026-07-28 (``mode="auto"`` negotiates it).
"""

from __future__ import annotations

import base64
import re
import subprocess
from typing import Any

import anyio
import httpx2
import pytest
from mcp.types import ImageContent
from serve_helpers import PNG, Asker, http_client, outcome_of, stdio_client, text_of

# -- stdio ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_list_and_call_over_stdio(served: dict[str, Any], mode: str) -> None:
    async def main() -> None:
        async with stdio_client(served, mode) as client:
            expected = "2025-11-25" if mode == "legacy" else "2026-07-28"
            assert client.protocol_version == expected
            assert client.server_info is not None and client.server_info.name == "hermes"
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == {"picture", "big", "ask", "ask_in_thread", "patient", "terminal", "process"}
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
        assert error.startswith("HTTP 401 Unauthorized: the server refused the credentials sent"), error
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
