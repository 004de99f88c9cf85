"""Standing approvals are read at load: a config edited during the session never widens them (a removal
narrows them at once), and ``hermes approvals list|revoke`` manages them."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

import hermes_builtin.plugin
from hermes_core import ToolSystem
from hermes_core.cli import cli
from hermes_core.security import ApprovalRequest, ApprovalStore, standing_approvals

COMMAND = "git push --force origin main"  # dangerous, needs approval, harmless here (no remote)


def grant_line(subject: str) -> str:
    return f'  {{ kind = "command", subject = "{subject}", added = "2025-01-01" }},\n'


def load(config: Path, workspace: Path) -> ToolSystem:
    return ToolSystem.load(
        load_entry_points=False,
        plugins_dir=False,
        plugins=[hermes_builtin.plugin],
        config=config,
        workspace=workspace,
    )


def test_grants_written_during_a_session_are_ignored_until_the_next_load(
    tmp_path: Path, workspace: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[approvals]\ndangerous_commands = true\n")
    with load(config, workspace) as system:
        assert system.call_outcome("terminal", {"command": COMMAND}).status == "denied"
        # the file changes under the running system: a grant, and approvals switched off
        config.write_text(
            "[approvals]\ndangerous_commands = false\nalways = [\n" + grant_line(COMMAND) + "]\n"
        )
        outcome = system.call_outcome("terminal", {"command": COMMAND})
        assert outcome.status == "denied", outcome.result
    with load(config, workspace) as fresh:  # a person's edit counts from the next load on
        assert fresh.call_outcome("terminal", {"command": COMMAND}).status != "denied"


def test_a_revocation_narrows_a_running_session(tmp_path: Path, workspace: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        "# mine\n[approvals]\nalways = [\n" + grant_line(COMMAND) + grant_line("make deploy") + "]\n"
    )
    with load(config, workspace) as system:
        assert system.call_outcome("terminal", {"command": COMMAND}).status != "denied"
        runner = CliRunner()
        listed = runner.invoke(cli, ["--config", str(config), "approvals", "list", "--json"])
        assert [g["subject"] for g in json.loads(listed.stdout)] == [COMMAND, "make deploy"]
        revoked = runner.invoke(cli, ["--config", str(config), "approvals", "revoke", "1"])
        assert revoked.exit_code == 0 and f"revoked command: {COMMAND}" in revoked.stdout
        assert system.call_outcome("terminal", {"command": COMMAND}).status == "denied"
    assert "# mine" in config.read_text()
    assert [g["subject"] for g in standing_approvals(config)] == ["make deploy"]
    runner = CliRunner()
    assert (
        runner.invoke(cli, ["--config", str(config), "approvals", "revoke", "nothing like it"]).exit_code == 1
    )
    assert runner.invoke(cli, ["--config", str(config), "approvals", "revoke", "--all"]).exit_code == 0
    assert standing_approvals(config) == []
    assert (
        "no standing approvals" in runner.invoke(cli, ["--config", str(config), "approvals", "list"]).stderr
    )


def test_an_always_answer_of_this_session_holds_and_is_listed(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    store = ApprovalStore(config, grants=[])
    request = ApprovalRequest("command", "make deploy", "deploys")
    store.grant(request, "always")
    assert store.is_granted(request)
    assert standing_approvals(config)[0]["subject"] == "make deploy"
    assert ApprovalStore(config).is_granted(request)  # a later load reads it back
