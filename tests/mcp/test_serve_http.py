"""The HTTP side of ``hermes mcp serve``: tokens (any case of ``Bearer``, from a file or the environment, never
needed on the command line), error hints, a connection limit, silent connections closed, skills served."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from serve_helpers import http_client, make_served, serving_http

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _post(url: str, authorization: str | None) -> httpx2.Response:
    headers = dict(HEADERS)
    if authorization is not None:
        headers["Authorization"] = authorization
    return httpx2.post(url, json=INIT, headers=headers, timeout=10)


def test_bearer_is_matched_in_any_case_and_a_401_says_what_was_wrong(served: dict[str, Any]) -> None:
    with serving_http(served, token="s3cret-token") as (url, _, _):
        for scheme in ("Bearer", "bearer", "BEARER"):
            assert _post(url, f"{scheme} s3cret-token").status_code == 200
        missing = _post(url, None)
        assert missing.status_code == 401 and "needs a bearer token" in missing.json()["error"]
        assert missing.headers["www-authenticate"] == 'Bearer realm="hermes"'
        basic = _post(url, "Basic czNjcmV0")
        assert basic.status_code == 401 and "not the 'Basic' scheme" in basic.json()["error"]
        wrong = _post(url, "Bearer nope")
        assert wrong.status_code == 401 and "token is wrong" in wrong.json()["error"]
        assert 'error="invalid_token"' in wrong.headers["www-authenticate"]


@pytest.mark.parametrize("source", ["file", "config-file", "config-env", "env"])
def test_the_token_comes_from_a_file_or_the_environment(tmp_path: Path, source: str) -> None:
    token_file = tmp_path / "token.txt"
    token_file.write_text("from-a-file-123\n")
    config = ""
    if source == "config-file":
        config = f'[mcp.serve]\ntoken = {{ file = "{token_file}" }}\n'
    elif source == "config-env":
        config = '[mcp.serve]\ntoken = { env = "MY_SERVE_TOKEN" }\n'
    served = make_served(tmp_path, config)
    served["env"]["MY_SERVE_TOKEN"] = "from-a-file-123"
    extra: tuple[str, ...] = ("--token-file", str(token_file)) if source == "file" else ()
    token = "from-a-file-123" if source == "env" else None
    with serving_http(served, token=token, extra=extra) as (url, printed, proc):
        assert "clients must send Authorization: Bearer <token>" in printed
        assert _post(url, None).status_code == 401
        assert _post(url, "Bearer from-a-file-123").status_code == 200
        argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
        assert b"from-a-file-123" not in argv  # the secret is in no process's argv


def test_a_token_on_the_command_line_works_but_is_warned_about(served: dict[str, Any]) -> None:
    with serving_http(served, extra=("--token", "argv-token-1")) as (url, printed, _):
        assert "visible to other users" in printed
        assert _post(url, "Bearer argv-token-1").status_code == 200


def test_silent_connections_are_closed_and_the_connection_limit_holds(tmp_path: Path) -> None:
    served = make_served(tmp_path, "[mcp.serve]\nmax_connections = 4\nidle_connection_seconds = 1\n")
    with serving_http(served) as (url, _, _):
        host, port = url.split("//")[1].split("/")[0].split(":")
        silent = [socket.create_connection((host, int(port)), timeout=5) for _ in range(4)]
        try:
            refused = socket.create_connection((host, int(port)), timeout=5)
            reply = refused.recv(4096)
            assert reply.startswith(b"HTTP/1.1 503") and b"too many open connections" in reply
            refused.close()
            started = time.monotonic()
            for sock in silent:  # each one is closed by the server after about a second of silence
                assert sock.recv(1) == b""
            assert time.monotonic() - started < 5
        finally:
            for sock in silent:
                sock.close()
        assert _post(url, None).status_code == 200  # and the server serves on


def test_skills_are_served_as_prompts_and_resources(tmp_path: Path) -> None:
    served = make_served(tmp_path, toolsets=("demo",))
    with serving_http(served) as (url, _, _):

        async def main() -> None:
            async with http_client(url, None, "legacy", None) as client:
                prompts = {p.name: p for p in (await client.list_prompts()).prompts}
                assert "git-workflow" in prompts and prompts["git-workflow"].description
                prompt = await client.get_prompt("git-workflow")
                assert "git" in prompt.messages[0].content.text.lower()  # type: ignore[union-attr]
                resources = {str(r.uri) for r in (await client.list_resources()).resources}
                assert "skill://git-workflow/SKILL.md" in resources
                read = await client.read_resource("skill://git-workflow/SKILL.md")
                assert read.contents[0].text == prompt.messages[0].content.text  # type: ignore[union-attr]
                from mcp.shared.exceptions import MCPError

                with pytest.raises(MCPError, match="no skill named"):
                    await client.get_prompt("no-such-skill")
                with pytest.raises(MCPError, match=r"outside the skill folder|must stay inside"):
                    await client.read_resource("skill://git-workflow/../../../etc/passwd")
                # the skills are read-only: no tool to change them is offered
                assert "skill_manage" not in {t.name for t in (await client.list_tools()).tools}

        anyio.run(main)


def test_a_wrong_serve_setting_is_named(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from hermes_core.cli import cli

    config = tmp_path / "config.toml"
    config.write_text("[mcp.serve]\nsession_concurrency = 0\n")
    result = CliRunner().invoke(cli, ["--config", str(config), "mcp", "serve", "--http", "127.0.0.1:0"])
    assert result.exit_code == 1
    assert "[mcp.serve] session_concurrency must be a whole number of at least 1, got 0" in result.output
    config.write_text('[mcp.serve]\ntoken = { env = "NO_SUCH_VARIABLE_SET" }\n')
    result = CliRunner().invoke(cli, ["--config", str(config), "mcp", "serve", "--http", "127.0.0.1:0"])
    assert result.exit_code == 1 and "[mcp.serve] token points at an unset variable" in result.output
