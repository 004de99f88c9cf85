"""What each backend stops and what Landlock cannot, with every guard off: the host's /dev/shm, set-user-ID bits
and (bwrap) metadata and command lines of host processes are out of reach; under Landlock, command lines of host
processes and permissions of files outside the allow-list are documented as NOT stopped, tested as such, and said
by ``hermes sandbox status`` and the doctor. ``auto`` never picks Landlock where bwrap works."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from sandbox_stage import Scene, token

from hermes_core.cli import cli
from hermes_core.sandbox import choose_backend, report
from hermes_core.sandbox._bwrap import probe_bwrap


@pytest.fixture
def shm_secret() -> Iterator[tuple[Path, str]]:
    secret = f"shm-secret-{token()}"
    path = Path("/dev/shm") / f"hermes-test-{token()}"
    path.write_text(secret)
    yield path, secret
    path.unlink(missing_ok=True)


def test_the_hosts_dev_shm_is_out_of_reach(scene: Scene, shm_secret: tuple[Path, str]) -> None:
    path, secret = shm_secret
    planted = Path("/dev/shm") / f"hermes-planted-{token()}"
    out = scene.shell(
        "terminal",
        f"cat {path}; ls -a /dev/shm > listing.txt; echo x > {planted}; echo more >> {path}; echo done",
    )
    assert "done" in out and secret not in out, out
    assert path.name not in (scene.workspace / "listing.txt").read_text()
    assert not planted.exists() and path.read_text() == secret


def test_set_user_id_bits_are_refused_inside_and_outside_the_roots(scene: Scene) -> None:
    inside = scene.workspace / "tool"
    inside.write_text("#!/bin/sh\n")
    before = scene.sentinel.stat().st_mode
    scene.shell("terminal", f"chmod u+s,g+s {inside} {scene.sentinel}; echo done")
    assert not inside.stat().st_mode & (stat.S_ISUID | stat.S_ISGID)
    assert not scene.sentinel.stat().st_mode & (stat.S_ISUID | stat.S_ISGID)
    assert stat.S_IMODE(before) & 0o777 == 0o644


def test_chmod_outside_the_roots_stopped_by_bwrap_documented_for_landlock(scene: Scene) -> None:
    scene.sentinel.chmod(0o600)
    scene.shell("terminal", f"chmod 666 {scene.sentinel}; echo done")
    mode = stat.S_IMODE(scene.sentinel.stat().st_mode)
    if scene.backend == "bwrap":
        assert mode == 0o600
    else:  # Landlock guards contents, not metadata: documented as not stopped, and it is not
        assert mode == 0o666
        assert any("NOT STOPPED: file metadata" in line for line in report("landlock")["limitations"])


def test_command_lines_of_host_processes_hidden_by_bwrap_documented_for_landlock(scene: Scene) -> None:
    secret = f"argv-token-{token()}"
    holder = subprocess.Popen(["sh", "-c", "sleep 120", secret])  # the token is its $0
    try:
        out = scene.shell(
            "terminal", "grep -a -h -o 'argv-token-[0-9a-f]\\{16\\}' /proc/[0-9]*/cmdline; echo done"
        )
    finally:
        holder.kill()
        holder.wait()
    assert "done" in out
    if scene.backend == "bwrap":
        assert secret not in out
    else:
        assert secret in out  # no PID namespace: documented as not stopped
        assert any("NOT STOPPED: host processes" in line for line in report("landlock")["limitations"])


def test_auto_never_picks_landlock_where_bwrap_works() -> None:
    if probe_bwrap()[0] is None:
        pytest.skip("bwrap is not usable here")
    assert choose_backend("auto").name == "bwrap"


def test_status_and_doctor_say_what_landlock_does_not_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if choose_backend("landlock").backend is None:
        pytest.skip("Landlock is not usable here")
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "config.toml"
    config.write_text('[sandbox]\nbackend = "landlock"\n')
    result = CliRunner().invoke(cli, ["--config", str(config), "sandbox", "status", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["backend"] == "landlock" and data["filter"]["available"]
    joined = "\n".join(data["limitations"])
    assert "NOT STOPPED: host processes stay visible in /proc, command lines included" in joined
    assert "NOT STOPPED: file metadata" in joined
    text = CliRunner().invoke(cli, ["--config", str(config), "sandbox", "status"]).output
    assert "NOT STOPPED" in text and "system-call filter: on" in text
    from hermes_core.config import load_config
    from hermes_core.sandbox._diagnose import diagnose

    findings = diagnose(load_config(config), tmp_path)
    assert any(f.severity == "warning" and "does NOT stop" in f.message for f in findings), findings
    bwrap = json.loads(CliRunner().invoke(cli, ["sandbox", "status", "--json"]).stdout)
    if bwrap["backend"] == "bwrap":
        assert os.geteuid() != 0 or any("also when hermes runs as root" in g for g in bwrap["guarantees"])
