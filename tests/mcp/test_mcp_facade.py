"""The ToolSystem face of MCP: ``mcp_status()``, ``wait_mcp()`` and the CLI waiting for servers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from click.testing import CliRunner

from hermes_core import ToolSystem
from hermes_core.cli import cli

SERVER = str(Path(__file__).with_name("echo_server.py"))


def test_status_and_wait_through_the_system() -> None:
    plain = ToolSystem.load(plugins_dir=False, load_entry_points=False)
    assert plain.mcp_status() == {} and plain.wait_mcp(0.1) is True
    plain.close()
    config = {"mcp": {"servers": {"demo": {"command": sys.executable, "args": [SERVER]}}}}
    system = ToolSystem.load(plugins_dir=False, load_entry_points=False, config=config)
    try:
        assert system.wait_mcp(30) is True
        status = system.mcp_status()["demo"]
        assert status["state"] == "ready" and "add" in status["tools"]
        assert system.call("add", {"a": 2, "b": 40}) == "42"
    finally:
        system.close()


def test_the_cli_waits_for_mcp_tools(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f"[mcp.servers.demo]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(SERVER)}]\n"
    )
    result = CliRunner().invoke(cli, ["--config", str(config), "call", "add", '{"a": 1, "b": 2}'])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "3"


def test_the_doctor_reports_a_failing_mcp_server(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f"[mcp.servers.demo]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(SERVER)}]\n"
        '[mcp.servers.broken]\ncommand = "/nonexistent/mcp-server"\n'
    )
    result = CliRunner().invoke(cli, ["--config", str(config), "plugins", "doctor", "--json"])
    report = json.loads(result.stdout)
    assert result.exit_code == 1 and report["ok"] is False
    mcp = [p for p in report["problems"] if p["check"] == "mcp"]
    assert [p["plugin"] for p in mcp] == ["mcp:broken"]
    assert mcp[0]["severity"] == "error" and "[mcp.servers.broken]" in mcp[0]["fix"]
