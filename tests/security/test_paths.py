"""The path guard with real files and real symlinks under a fake home."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hermes_core.security import MalformedPathError, check_path


def test_workspace_files_are_allowed(fake_home: Path, workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "a.py").write_text("x = 1\n")
    for op in ("read", "write"):
        verdict = check_path("src/a.py", op, workspace)  # type: ignore[arg-type]
        assert verdict.decision == "allow"
        assert verdict.resolved == (workspace / "src" / "a.py").resolve()
        assert verdict.inside_workspace


def test_tmp_allowed_and_public_system_files_readable(workspace: Path) -> None:
    assert check_path("/tmp/scratch.txt", "write", workspace).decision == "allow"
    assert check_path("/etc/os-release", "read", workspace).decision == "allow"
    assert check_path("/etc/hostname", "read", workspace).decision == "allow"


@pytest.mark.parametrize(
    "target", ["/etc/passwd", "/usr/bin/python3", "/boot/x", "/proc/sys/kernel/x", "/sys/x", "/dev/sda"]
)
def test_system_writes_refused(workspace: Path, target: str) -> None:
    verdict = check_path(target, "write", workspace)
    assert verdict.decision == "refuse", verdict.reason


@pytest.mark.parametrize(
    "rel",
    [".ssh/id_rsa", ".ssh/id_ed25519", ".aws/credentials", ".config/gcloud/credentials.db", ".netrc", ".pgpass",
     ".pypirc", ".git-credentials", ".local/share/keyrings/login.keyring", ".gnupg/private-keys-v1.d/x.key"],
)  # fmt: skip
def test_credentials_refused_for_read_and_write(fake_home: Path, workspace: Path, rel: str) -> None:
    target = fake_home / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("secret\n")
    for op in ("read", "write"):
        verdict = check_path(f"~/{rel}", op, workspace)  # type: ignore[arg-type]
        assert verdict.decision == "refuse", (rel, op, verdict.reason)


def test_npmrc_refused_only_with_token(fake_home: Path, workspace: Path) -> None:
    npmrc = fake_home / ".npmrc"
    npmrc.write_text("registry=https://registry.npmjs.org/\n")
    assert check_path("~/.npmrc", "read", workspace).decision == "ask"
    npmrc.write_text("//registry.npmjs.org/:_authToken=npm_abc\n")
    assert check_path("~/.npmrc", "read", workspace).decision == "refuse"


def test_proc_environ_refused(workspace: Path) -> None:
    assert check_path("/proc/self/environ", "read", workspace).decision == "refuse"
    assert check_path(f"/proc/{os.getpid()}/environ", "read", workspace).decision == "refuse"


def test_own_config_refused(fake_home: Path, workspace: Path) -> None:
    hermes = Path(os.environ["HERMES_HOME"])
    hermes.mkdir()
    (hermes / "config.toml").write_text("[approvals]\n")
    (hermes / "secrets.toml").write_text("x = 1\n")
    (hermes / "data").mkdir()
    assert check_path(hermes / "config.toml", "read", workspace).decision == "refuse"
    assert check_path(hermes / "secrets.toml", "write", workspace).decision == "refuse"
    assert (
        check_path(hermes / "data" / "notes.txt", "write", workspace).decision == "refuse"
    )  # state: issue 16
    assert check_path(hermes / "data" / "notes.txt", "read", workspace).decision != "refuse"


@pytest.mark.parametrize(
    "rel", [".bashrc", ".zshrc", ".profile", ".ssh/config", ".gitconfig", ".config/systemd/user/x.service",
            ".config/autostart/x.desktop", "Library/LaunchAgents/x.plist"]
)  # fmt: skip
def test_ask_paths_in_home(fake_home: Path, workspace: Path, rel: str) -> None:
    assert check_path(f"~/{rel}", "write", workspace).decision == "ask"


def test_ask_paths_in_workspace(workspace: Path) -> None:
    (workspace / ".git" / "hooks").mkdir(parents=True)
    assert check_path(".git/hooks/pre-commit", "write", workspace).decision == "ask"
    assert check_path(".git/config", "write", workspace).decision == "ask"
    assert check_path(".env", "read", workspace).decision == "ask"
    assert check_path("deploy/.env.production", "write", workspace).decision == "ask"


def test_outside_workspace_asks(fake_home: Path, workspace: Path) -> None:
    (fake_home / "notes.txt").write_text("hi")
    assert check_path("~/notes.txt", "read", workspace).decision == "ask"
    assert check_path("~/elsewhere.txt", "write", workspace).decision == "ask"
    assert check_path("/srv/data/x.txt", "read", workspace).decision == "ask"


def test_dot_dot_and_double_slashes_resolved(workspace: Path) -> None:
    up = "../" * len(workspace.parts)  # past the root however deep the temporary folder is
    verdict = check_path(f"src/{up}/etc/./passwd", "write", workspace)
    assert verdict.decision == "refuse" and verdict.resolved == Path("/etc/passwd").resolve()


def test_symlink_to_private_key_is_judged_as_the_key(fake_home: Path, workspace: Path) -> None:
    key = fake_home / ".ssh" / "id_rsa"
    key.parent.mkdir()
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    (workspace / "innocent.txt").symlink_to(key)
    verdict = check_path("innocent.txt", "read", workspace)
    assert verdict.decision == "refuse" and verdict.resolved == key.resolve()


def test_symlinked_directory_to_etc(workspace: Path) -> None:
    (workspace / "conf").symlink_to("/etc")
    assert check_path("conf/passwd", "write", workspace).decision == "refuse"
    assert check_path("conf/os-release", "read", workspace).decision == "allow"


@pytest.mark.parametrize("bad", ["", "   ", "a\x00b", "x" * 256, "dir/" + "é" * 200, "\udc80oops"])
def test_malformed_paths(workspace: Path, bad: str) -> None:
    with pytest.raises(MalformedPathError) as info:
        check_path(bad, "write", workspace)
    assert isinstance(info.value, ValueError) and str(info.value)
    assert not any(workspace.iterdir())


def test_bad_op(workspace: Path) -> None:
    with pytest.raises(ValueError):
        check_path("a.txt", "delete", workspace)  # type: ignore[arg-type]
