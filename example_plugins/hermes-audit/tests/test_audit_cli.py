"""``hermes audit verify`` and ``hermes audit sqlite``, run through click with real files."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import click
import pytest
from audit_support import edit, read_lines, write_lines, write_records
from click.testing import CliRunner
from hermes_audit import register_commands


@pytest.fixture
def cli() -> click.Group:
    @click.group()
    def hermes() -> None:
        """A stand-in for the hermes group: register_commands only needs a click group."""

    register_commands(hermes)
    return hermes


def test_verify_ok_and_tampered(cli: click.Group, tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    records = write_records(path, 3)
    result = CliRunner().invoke(cli, ["audit", "verify", str(path)])
    assert result.exit_code == 0, result.output
    assert f"OK: 3 records, head {records[-1]['hash']}" in result.output
    lines = read_lines(path)
    lines[0] = edit(lines[0], tool="other")
    write_lines(path, lines)
    result = CliRunner().invoke(cli, ["audit", "verify", str(path)])
    assert result.exit_code == 1
    assert "line 1 (seq 1): hash mismatch" in result.output and "TAMPERED (1 problem(s))" in result.output


def test_verify_json_and_anchor(cli: click.Group, tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    records = write_records(path, 3)
    result = CliRunner().invoke(cli, ["audit", "verify", str(path), "--json", "--anchor", records[1]["hash"]])
    assert result.exit_code == 0
    assert json.loads(result.output) | {"path": None} == {
        "path": None,
        "ok": True,
        "records": 3,
        "head": records[-1]["hash"],
        "problems": [],
    }
    result = CliRunner().invoke(cli, ["audit", "verify", str(path), "--anchor", "f" * 64])
    assert result.exit_code == 1 and "is not in the chain" in result.output


def test_verify_defaults_to_the_data_dir(
    cli: click.Group, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    result = CliRunner().invoke(cli, ["audit", "verify"])
    assert result.exit_code == 1 and "no such file" in result.output
    write_records(tmp_path / "data" / "audit" / "audit.jsonl", 2)
    result = CliRunner().invoke(cli, ["audit", "verify"])
    assert result.exit_code == 0 and "OK: 2 records" in result.output


def test_sqlite_command(cli: click.Group, tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    write_records(path, 4, time="2025-01-01T00:00:00Z")
    result = CliRunner().invoke(cli, ["audit", "sqlite", str(path)])
    assert result.exit_code == 0 and "4 record(s) added" in result.output
    con = sqlite3.connect(tmp_path / "audit.sqlite3")
    assert con.execute("SELECT count(*) FROM calls").fetchone() == (4,)
    con.close()


def test_verify_follows_the_config_file(
    cli: click.Group, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    (tmp_path / "config.toml").write_text('[plugins.audit]\npath = "custom.jsonl"\nsqlite = "custom.db"\n')
    write_records(tmp_path / "data" / "audit" / "custom.jsonl", 3, time="2025-01-01T00:00:00Z")
    result = CliRunner().invoke(cli, ["audit", "verify"])
    assert result.exit_code == 0 and "custom.jsonl: OK: 3 records" in result.output
    result = CliRunner().invoke(cli, ["audit", "sqlite"])
    assert result.exit_code == 0 and "custom.db: 3 record(s) added" in result.output


def test_bad_audit_section_is_a_clear_error(
    cli: click.Group, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    (tmp_path / "config.toml").write_text("[plugins.audit]\nsqlite = 3\n")
    result = CliRunner().invoke(cli, ["audit", "verify"])
    assert result.exit_code == 1 and "sqlite must be true, false or a path" in result.output


def test_the_real_hermes_command(tmp_path: Path) -> None:
    import os
    import shutil
    import subprocess
    import sys

    hermes = shutil.which("hermes", path=str(Path(sys.executable).parent))
    assert hermes is not None, "the hermes console script is not installed next to this Python"
    env = {**os.environ, "HERMES_HOME": str(tmp_path), "HERMES_LOAD_PLUGINS": "audit"}
    path = tmp_path / "data" / "audit" / "audit.jsonl"
    write_records(path, 2)
    done = subprocess.run([hermes, "audit", "verify"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "OK: 2 records" in done.stdout
    lines = read_lines(path)
    write_lines(path, [lines[1]])
    done = subprocess.run([hermes, "audit", "verify"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "line 1 (seq 2): prev_hash does not match" in done.stderr
