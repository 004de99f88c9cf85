"""``hermes sandbox status`` and the doctor's sandbox findings: which backend runs commands, and why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import Run

from hermes_core.sandbox import choose_backend


def _config(home: Path, text: str) -> None:
    (home / "config.toml").write_text(text)


def test_status_names_the_backend_and_what_a_command_sees(home: Path, run: Run, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    out = run("--workspace", str(project), "sandbox", "status", "--json")
    data = json.loads(out.stdout)
    expected = choose_backend("auto")
    assert data["backend"] == expected.name and data["reason"] == expected.reason
    assert data["backends"][expected.name]["available"] is True
    assert data["view"]["workspace"] == str(project.resolve())
    assert str(home.resolve()) in data["view"]["hermes_folders"]
    assert data["guarantees"] and "limitations" in data
    assert out.exit_code == 0
    text = run("--workspace", str(project), "sandbox", "status").stdout
    assert f"backend: {expected.name} (configured: auto)" in text and "why:" in text


def test_a_workspace_inside_hermes_data_is_refused(home: Path, run: Run) -> None:
    (home / "data" / "project").mkdir(parents=True)
    data = json.loads(
        run("--workspace", str(home / "data" / "project"), "sandbox", "status", "--json").stdout
    )
    assert "inside hermes's own folder" in data["view"]["refused"]
    fine = json.loads(run("--workspace", str(home / "workspace"), "sandbox", "status", "--json").stdout)
    assert fine["view"]["workspace"] == str((home / "workspace").resolve())  # HERMES_HOME/workspace is fine


def test_backend_none_is_a_doctor_warning(home: Path, run: Run, tmp_path: Path) -> None:
    _config(home, '[sandbox]\nbackend = "none"\n')
    data = json.loads(run("--workspace", str(tmp_path), "sandbox", "status", "--json").stdout)
    assert data["backend"] == "none" and "chosen in the configuration" in data["reason"]
    doctor = json.loads(run("--workspace", str(tmp_path), "plugins", "doctor", "--json").stdout)
    (problem,) = [p for p in doctor["problems"] if p["plugin"] == "sandbox" and p["severity"] != "info"]
    assert problem["severity"] == "warning" and "WITHOUT a sandbox" in problem["message"]
    assert doctor["ok"] is True  # a warning, not an error: the choice was explicit


def test_a_toolchain_in_home_adds_a_note_never_a_problem(
    home: Path, run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A $HOME holding .rustup (or any toolchain) gives the doctor one more note about the sandbox, whatever
    machine the tests run on: the sandbox findings are told apart by severity, not counted."""
    fake_home = tmp_path / "home"
    (fake_home / ".rustup").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(fake_home))
    (tmp_path / "ws").mkdir()
    doctor = json.loads(run("--workspace", str(tmp_path / "ws"), "plugins", "doctor", "--json").stdout)
    sandbox = [p for p in doctor["problems"] if p["plugin"] == "sandbox"]
    notes = [p for p in sandbox if ".rustup" in p["message"]]
    assert notes and all(p["severity"] == "info" for p in notes), sandbox


def test_bad_sandbox_values_are_reported(home: Path, run: Run, tmp_path: Path) -> None:
    _config(home, '[sandbox]\nbackend = "docker"\n')
    data = json.loads(run("--workspace", str(tmp_path), "sandbox", "status", "--json").stdout)
    assert "backend must be one of auto, bwrap, landlock, none" in data["error"]


def test_without_bwrap_auto_falls_back_and_says_why(home: Path, tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty)}

    def status(config: str) -> tuple[int, dict[str, object]]:
        _config(home, config)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "hermes_core.cli",
                "--workspace",
                str(tmp_path),
                "sandbox",
                "status",
                "--json",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return done.returncode, json.loads(done.stdout)

    code, data = status("")
    assert "bwrap (bubblewrap) is not installed" in str(data["reason"])
    if data["backend"] == "landlock":
        assert code == 0 and "Landlock ABI" in str(data["reason"])
    code, data = status('[sandbox]\nbackend = "bwrap"\n')
    assert code == 1 and data["backend"] is None
    assert "apt install bubblewrap" in str(data["reason"])
    errors = [f for f in data["findings"] if f["severity"] == "error"]  # type: ignore[union-attr]
    assert errors and "refuse to run" in errors[0]["message"]
