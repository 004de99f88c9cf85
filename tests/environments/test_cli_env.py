"""``hermes env status``, the doctor's environment finding, and ``hermes call``'s session that ends with it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from hermes_core.cli import cli
from hermes_core.testing import processes_gone, sleep_marker

HERMES = Path(sys.executable).with_name("hermes")


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Path:
    path = Path(os.environ["HERMES_HOME"])
    workspace = path / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(workspace)
    return path


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_env_status_says_where_sessions_run_and_what_persists(home: Path) -> None:
    shown = run("env", "status")
    assert shown.exit_code == 0, shown.output
    assert shown.output.startswith("environment: local (ready)")
    assert "what persists between commands:" in shown.output and "deactivate" in shown.output
    assert "kinds: local (built in)" in shown.output
    data = json.loads(run("env", "status", "--json").output)
    assert data["ready"] is True and data["kind"] == "local" and data["files_ready"] is True
    assert any("RESOLVE_BENEATH" in g for g in data["guarantees"])


def test_env_status_and_the_doctor_say_why_it_cannot_start(home: Path) -> None:
    (home / "config.toml").write_text('[environment]\nkind = "ssh"\n')
    shown = run("env", "status")
    assert shown.exit_code == 1
    assert "environment: ssh (cannot start)" in shown.output
    assert "not part of this version" in shown.output and "file tools: hidden too" in shown.output
    report = json.loads(run("plugins", "doctor", "--json").output)
    found = [p for p in report["problems"] if p["check"] == "environment"]
    assert (
        found
        and found[0]["severity"] == "error"
        and "terminal, process and execute_code are hidden" in (found[0]["message"])
    )
    listed = run("tools", "list", "--json")
    rows = {r["name"]: r for r in json.loads(listed.output)}
    assert rows["terminal"]["available"] is False
    assert "ssh" in json.dumps(rows["terminal"])


@pytest.mark.skipif(not HERMES.exists(), reason="the hermes console script is not installed")
def test_hermes_call_runs_in_a_session_that_ends_with_the_command(home: Path) -> None:
    marker = sleep_marker()
    started = subprocess.run(
        [str(HERMES), "call", "terminal", json.dumps({"command": f"sleep {marker}", "background": True})],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert started.returncode == 0, started.stderr
    assert "process_id=" in started.stdout
    assert processes_gone(marker, 10)  # the session (and its process) ended with the command
    state = subprocess.run(
        [str(HERMES), "call", "terminal", "command=cd /tmp && export X=1 && echo $X from $PWD"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert state.returncode == 0 and state.stdout.startswith("1 from /tmp\n")
