"""``terminal``, ``process`` and ``execute_code`` are hidden, with the reason and the doctor's fix, when the
configured sandbox cannot start a command (``backend = "bwrap"`` without bwrap, a bwrap that cannot make
namespaces); with a working bwrap they are listed and run. Each case is a fresh ``hermes`` process with a fake
``PATH``, since the backend probe is cached per process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

RUNNERS = ("terminal", "process", "execute_code")


@pytest.fixture
def fake_bin(tmp_path: Path) -> Path:
    """A ``PATH`` with bash and nothing else (no bwrap)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    bash = shutil.which("bash")
    assert bash is not None
    (folder / "bash").symlink_to(bash)
    return folder


def _hermes(tmp_path: Path, path: Path | str, config: str, *args: str) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(config)
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env.update(PATH=str(path), HERMES_HOME=str(home), HERMES_LOAD_PLUGINS="builtin")
    return subprocess.run(
        [sys.executable, "-m", "hermes_core.cli", "--workspace", str(workspace), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def _rows(done: subprocess.CompletedProcess[str]) -> dict[str, dict[str, object]]:
    assert done.returncode == 0, done.stderr
    return {r["name"]: r for r in json.loads(done.stdout)}


def test_bwrap_configured_but_missing_hides_the_runners(tmp_path: Path, fake_bin: Path) -> None:
    config = '[sandbox]\nbackend = "bwrap"\n'
    rows = _rows(_hermes(tmp_path, fake_bin, config, "tools", "list", "--all", "--json"))
    for name in RUNNERS:
        assert rows[name]["available"] is False, name
        assert "commands cannot run" in str(rows[name]["reason"]), rows[name]
        assert "bwrap (bubblewrap) is not installed" in str(rows[name]["reason"])
    assert rows["read_file"]["available"] is True  # only what needs the sandbox is hidden

    call = _hermes(tmp_path, fake_bin, config, "call", "terminal", '{"command": "echo hi"}')
    assert call.returncode != 0 and "hi\n" not in call.stdout
    assert "bwrap" in call.stdout + call.stderr  # the refusal says why

    doctor = _hermes(tmp_path, fake_bin, config, "plugins", "doctor", "--json")
    problems = json.loads(doctor.stdout)["problems"]
    hidden = {
        p["message"].split("'")[1]: p for p in problems if p["check"] == "check" and "hidden" in p["message"]
    }
    for name in RUNNERS:
        assert "apt install bubblewrap" in hidden[name]["fix"], hidden[name]
        assert 'backend = "auto"' in hidden[name]["fix"]


def test_bwrap_that_cannot_make_namespaces_hides_the_runners(tmp_path: Path, fake_bin: Path) -> None:
    fake = fake_bin / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    rows = _rows(
        _hermes(tmp_path, fake_bin, '[sandbox]\nbackend = "bwrap"\n', "tools", "list", "--all", "--json")
    )
    for name in RUNNERS:
        reason = str(rows[name]["reason"])
        assert rows[name]["available"] is False and "cannot create namespaces" in reason, rows[name]
        assert "No permissions" in reason


def test_with_a_working_bwrap_the_runners_are_listed_and_run(tmp_path: Path) -> None:
    assert shutil.which("bwrap"), "bubblewrap is installed by .ci/run"
    config = '[sandbox]\nbackend = "bwrap"\n'
    path = os.environ["PATH"]
    rows = _rows(_hermes(tmp_path, path, config, "tools", "list", "--all", "--json"))
    assert all(rows[name]["available"] is True for name in RUNNERS), {n: rows[n] for n in RUNNERS}
    call = _hermes(tmp_path, path, config, "call", "terminal", '{"command": "echo hi"}')
    assert call.returncode == 0 and "hi" in call.stdout, call.stderr
