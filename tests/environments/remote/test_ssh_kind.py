"""What only the ``ssh`` kind does: the host's key is checked (a wrong or unknown key refuses the connection, no
trust on first use), an unreachable host is reported with the fix, and the file tools keep out of the remote
``~/.ssh`` and write only where they may."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from hermes_core import ToolSystem
from hermes_core.cli import cli
from hermes_core.testing import unguarded

Make = Callable[..., ToolSystem]


def _ok(system: ToolSystem, tool: str, **args: Any) -> str:
    outcome = system.call_outcome(tool, args)
    assert outcome.status == "ok", outcome.result
    return outcome.result


def test_a_wrong_host_key_is_refused(
    make_remote: Make, sshd: Any, remote_workspace: str, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True, timeout=60)
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"[127.0.0.1]:{sshd.port} {(tmp_path / 'other.pub').read_text()}")
    system = make_remote(sshd.config(remote_workspace, known_hosts=str(wrong)))
    refused = system.call_outcome("terminal", {"command": "echo should not run > ~/ran"})
    assert refused.status != "ok" and "host key" in refused.result and "refused" in refused.result
    assert not (Path(remote_workspace) / "ran").exists()
    unknown = tmp_path / "empty_known_hosts"
    unknown.write_text("")
    system = make_remote(sshd.config(remote_workspace, known_hosts=str(unknown)))
    refused = system.call_outcome("read_file", {"path": "anything"})
    assert refused.status != "ok" and "host key" in refused.result  # unknown: no trust on first use
    absent = make_remote(sshd.config(remote_workspace, known_hosts=str(tmp_path / "missing")))
    hidden = absent.call_outcome("terminal", {"command": "true"})
    assert hidden.status != "ok" and "does not exist" in hidden.result


def test_an_unreachable_host_is_reported_with_the_fix(
    sshd: Any, remote_workspace: str, tmp_path: Path
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens there once it is closed
    home = Path(os.environ["HERMES_HOME"])
    (home / "config.toml").write_text(
        f'[environment]\nkind = "ssh"\n[environment.ssh]\nhost = "127.0.0.1"\nport = {port}\nuser = "{sshd.user}"\n'
        f'key = "{sshd.key}"\nknown_hosts = "{sshd.known_hosts}"\nconnect_timeout = 5\n'
    )
    try:
        shown = CliRunner().invoke(cli, ["env", "status"], catch_exceptions=False)
        assert shown.exit_code == 1 and "environment: ssh (cannot start)" in shown.output
        assert "cannot reach" in shown.output and "runs sshd and is reachable" in shown.output
        report = json.loads(CliRunner().invoke(cli, ["plugins", "doctor", "--json"]).output)
        found = [p for p in report["problems"] if p["check"] == "environment"]
        assert found and found[0]["severity"] == "error" and "cannot reach" in found[0]["message"]
        listed = json.loads(CliRunner().invoke(cli, ["tools", "list", "--json"]).output)
        rows = {row["name"]: row for row in listed}
        assert rows["terminal"]["available"] is False and rows["read_file"]["available"] is False
    finally:
        (home / "config.toml").unlink()
    (home / "config.toml").write_text(
        f'[environment]\nkind = "ssh"\n[environment.ssh]\nhost = "127.0.0.1"\nport = {sshd.port}\n'
        f'user = "{sshd.user}"\nkey = "{sshd.key}"\nknown_hosts = "{sshd.known_hosts}"\n'
        f'workspace = "{remote_workspace}"\n'
    )
    try:
        shown = CliRunner().invoke(cli, ["env", "status"], catch_exceptions=False)
        assert shown.exit_code == 0 and f"on: {sshd.user}@127.0.0.1:{sshd.port}" in shown.output
    finally:
        (home / "config.toml").unlink()


def test_the_file_tools_keep_out_of_the_remote_ssh_folder(
    make_remote: Make, sshd: Any, remote_workspace: str
) -> None:
    secret = sshd.home / ".ssh" / "hermes-test-secret"
    secret.parent.mkdir(exist_ok=True)
    secret.write_text("remote secret\n")
    try:
        system = unguarded(
            make_remote(sshd.config(remote_workspace))
        )  # the environment's own walls, guard off
        hidden = system.call_outcome("read_file", {"path": "~/.ssh/hermes-test-secret"})
        assert hidden.status != "ok" and "hidden" in hidden.result and "remote secret" not in hidden.result
        outside = system.call_outcome(
            "write_file", {"path": "/var/tmp/hermes-ssh-outside.txt", "content": "x"}
        )
        assert outside.status != "ok" and not Path("/var/tmp/hermes-ssh-outside.txt").exists()
        assert "created" in _ok(system, "write_file", path="inside.txt", content="in\n")
        assert (Path(remote_workspace) / "inside.txt").read_text() == "in\n"
        assert (Path(remote_workspace) / "inside.txt").stat().st_uid != 0  # written as the remote user
    finally:
        secret.unlink()


def test_a_dropped_connection_is_opened_again_with_the_session_state(
    make_remote: Make, sshd: Any, remote_workspace: str
) -> None:
    from types import SimpleNamespace

    from hermes_core.environments import environment_for
    from hermes_core.environments._ssh_loop import run as _run

    system = make_remote(sshd.config(remote_workspace))
    _ok(system, "terminal", command="mkdir -p deeper && cd deeper && export KEPT=yes")
    env: Any = environment_for(SimpleNamespace(host=system, workspace=system.workspace, session_id="default"))
    first = env._conn
    first.close()
    _run(first.wait_closed(), 30)
    out = _ok(system, "terminal", command="pwd; echo $KEPT")
    assert out.splitlines()[:2] == [f"{remote_workspace}/deeper", "yes"]
    assert env._conn is not first and not env._conn.is_closed()
