"""The ToolSystem and CLI faces of the MCP client: status, wait, restart, ``hermes mcp list|restart``, the
CLI's bounded wait, and the doctor's MCP section."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

from click.testing import CliRunner
from mcp_helpers import SERVER, free_port

from hermes_core import ToolSystem
from hermes_core.cli import cli

DEMO_TOML = f"command = {json.dumps(sys.executable)}\nargs = [{json.dumps(SERVER)}]\n"


def _config(tmp_path: Path, text: str) -> str:
    config = tmp_path / "config.toml"
    config.write_text(text)
    return str(config)


def test_status_wait_and_restart_through_the_system() -> None:
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
        assert system.mcp_restart("demo") is True
        assert system.mcp_status()["demo"]["state"] == "connecting"  # at once: a wait right after waits
        assert system.wait_mcp(30) and system.mcp_status()["demo"]["state"] == "ready"
    finally:
        system.close()


def test_the_cli_waits_for_mcp_tools(tmp_path: Path) -> None:
    config = _config(tmp_path, f"[mcp.servers.demo]\n{DEMO_TOML}")
    result = CliRunner().invoke(cli, ["--config", config, "call", "add", '{"a": 1, "b": 2}'])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "3"
    assert "warning" not in result.stderr


def test_the_cli_wait_is_bounded_by_the_config_and_names_the_servers_it_gave_up_on(tmp_path: Path) -> None:
    mute = f'command = {json.dumps(sys.executable)}\nargs = ["-c", "import sys; sys.stdin.read()"]\n'
    config = _config(tmp_path, f"[mcp]\nready_timeout = 1.5\n[mcp.servers.mute]\n{mute}")
    started = time.monotonic()
    result = CliRunner().invoke(cli, ["--config", config, "tools", "list"])
    took = time.monotonic() - started
    assert result.exit_code == 0, result.output
    assert "read_file" in result.stdout
    found = re.search(
        r"gave up waiting for MCP server 'mute' after (\d+\.\d) s \(still connecting\)", result.stderr
    )
    assert found is not None and 1.5 <= float(found.group(1)) < 10, result.stderr
    assert "[mcp] ready_timeout, now 1.5 s" in result.stderr
    assert took < 10, f"the CLI waited {took:.1f} s"


def test_a_server_that_failed_is_not_said_to_be_waited_for(tmp_path: Path) -> None:
    dies = f'command = {json.dumps(sys.executable)}\nargs = ["-c", "import sys; sys.exit(\'no config\')"]\n'
    config = _config(tmp_path, f"[mcp]\nready_timeout = 20\n[mcp.servers.dies]\n{dies}")
    started = time.monotonic()
    result = CliRunner().invoke(cli, ["--config", config, "tools", "list"])
    assert time.monotonic() - started < 15  # it settled as failing: no need to wait out ready_timeout
    assert "MCP server 'dies' is not available" in result.stderr and "keeps retrying" in result.stderr
    assert "gave up waiting" not in result.stderr


def test_hermes_mcp_list_and_restart(tmp_path: Path) -> None:
    config = _config(tmp_path, f"[mcp.servers.demo]\n{DEMO_TOML}")
    runner = CliRunner()
    plain = runner.invoke(cli, ["--config", config, "mcp", "list"])
    assert plain.exit_code == 0, plain.output
    line = next(line for line in plain.stdout.splitlines() if line.startswith("demo\t"))
    assert "\tready\tstdio\t" in line and "read_file is demo_read_file (clashes with toolset 'file')" in line
    result = runner.invoke(cli, ["--config", config, "mcp", "restart", "demo"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("demo: ready, ")


def test_hermes_mcp_restart_of_a_server_that_does_not_run(tmp_path: Path) -> None:
    config = _config(tmp_path, '[mcp.servers.off]\ncommand = "x"\nenabled = false\n')
    runner = CliRunner()
    result = runner.invoke(cli, ["--config", config, "mcp", "list", "--json"])
    assert json.loads(result.stdout)[0]["state"] == "disabled"
    result = runner.invoke(cli, ["--config", config, "mcp", "restart", "nope"])
    assert result.exit_code == 2 and "no MCP server named 'nope'" in result.output
    result = runner.invoke(cli, ["--config", config, "mcp", "restart", "off"])
    assert result.exit_code == 1 and "is disabled" in result.output


def test_hermes_mcp_list_without_servers(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--config", _config(tmp_path, ""), "mcp", "list"])
    assert result.exit_code == 0 and "no MCP servers are configured" in result.stdout


def test_the_doctor_reports_down_servers_and_clashes_with_the_fix(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        f"[mcp]\nready_timeout = 30\n[mcp.servers.demo]\n{DEMO_TOML}[mcp.servers.again]\n{DEMO_TOML}"
        '[mcp.servers.broken]\ncommand = "/nonexistent/mcp-server"\n'
        f'[mcp.servers.web]\nurl = "http://127.0.0.1:{free_port()}/mcp"\n'
        '[mcp.servers.bad]\nurl = "http://127.0.0.1:9/mcp"\ncommand = "y"\n',
    )
    result = CliRunner().invoke(cli, ["--config", config, "plugins", "doctor", "--json"])
    report = json.loads(result.stdout)
    assert result.exit_code == 1 and report["ok"] is False
    mcp = {
        (p["plugin"], p["check"], p["severity"]): p
        for p in report["problems"]
        if p["check"].startswith("mcp")
    }
    down = mcp[("mcp:broken", "mcp", "error")]
    assert "is down: cannot start '/nonexistent/mcp-server'" in down["message"]
    assert "[mcp.servers.broken]" in down["fix"] and "hermes mcp restart broken" in down["fix"]
    assert "cannot connect" in mcp[("mcp:web", "mcp", "error")]["message"]
    assert "set either command" in mcp[("mcp:bad", "mcp", "error")]["message"]
    clashes = [p for p in report["problems"] if p["check"] == "mcp-names"]
    echo = next(p for p in clashes if "tool 'echo' of MCP server 'demo'" in p["message"])
    assert echo["severity"] == "warning"
    assert "clashes with MCP server 'again'; it is registered as 'demo_echo'" in echo["message"]
    assert 'prefix = "..." in [mcp.servers.demo]' in echo["fix"]
    hidden = [p for p in report["problems"] if p["severity"] == "info" and "batch" in p["message"]]
    assert hidden and "taskSupport: required" in hidden[0]["message"]
