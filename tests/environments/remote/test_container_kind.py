"""What only the ``container`` kind does: the container's life (removed on close, kept and reused with
``persist``), its network (none, or only the sandbox's proxy), files handed to the container's user, and what
``hermes env status``, the doctor and the tool list say when the engine or the image cannot serve."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import container_config  # type: ignore[import-not-found]

from hermes_core import ToolSystem
from hermes_core.cli import cli
from hermes_core.environments import EnvironmentUnavailable, environment_for
from hermes_core.environments._container import ContainerEnvironment
from hermes_core.testing import unguarded

Make = Callable[..., ToolSystem]
pytestmark = pytest.mark.timeout(900)  # the first test of a fresh machine builds the Debian image (~1 min)


def _env(system: ToolSystem) -> ContainerEnvironment:
    owner = SimpleNamespace(host=system, workspace=system.workspace, session_id=system.session_id)
    env = environment_for(owner)
    assert isinstance(env, ContainerEnvironment)
    return env


def _ok(system: ToolSystem, tool: str, **args: Any) -> str:
    outcome = system.call_outcome(tool, args)
    assert outcome.status == "ok", outcome.result
    return outcome.result


def _exists(podman: str, name: str) -> bool:
    done = subprocess.run([podman, "container", "exists", name], capture_output=True, timeout=60)
    return done.returncode == 0


def test_the_container_is_removed_on_close_and_kept_with_persist(
    make_remote: Make, debian_image: str, podman: str
) -> None:
    system = make_remote(container_config(debian_image))
    _ok(system, "terminal", command="true")
    name = _env(system).container_name
    assert _exists(podman, name)
    system.close()
    assert not _exists(podman, name)

    kept = make_remote(container_config(debian_image, persist=True))
    _ok(kept, "terminal", command="echo kept > /tmp/mark")
    name = _env(kept).container_name
    kept.close()
    try:
        assert _exists(podman, name)
        again = make_remote(container_config(debian_image, persist=True))
        assert _env(again).container_name == name
        assert "kept" in _ok(again, "terminal", command="cat /tmp/mark")  # the same container, reused
        again.close()
        changed = make_remote(container_config(debian_image, persist=True, pids_limit=256))
        assert _env(changed).container_name == name
        assert "No such file" in _ok(changed, "terminal", command="cat /tmp/mark 2>&1 || true")  # replaced
        changed.close()
    finally:
        subprocess.run([podman, "rm", "-f", "-t", "0", name], capture_output=True, timeout=60)


def test_no_network_or_only_the_sandboxs_proxy(make_remote: Make, debian_image: str) -> None:
    none = make_remote(container_config(debian_image))
    assert _ok(none, "terminal", command="ls /sys/class/net").splitlines()[0] == "lo"
    proxied = unguarded(make_remote(container_config(debian_image, network="proxy")))  # /dev/tcp is guarded
    probe = "echo $HTTPS_PROXY; (exec 3<>/dev/tcp/127.0.0.1/3128) 2>/dev/null && echo proxy reachable"
    out = _ok(proxied, "terminal", command=probe)
    assert "http://127.0.0.1:3128" in out and "proxy reachable" in out
    direct = _ok(proxied, "terminal", command="(exec 3<>/dev/tcp/1.1.1.1/80) 2>&1 || echo refused")
    assert "refused" in direct  # the namespace's only way out is the proxy


def test_files_written_for_the_containers_user_belong_to_it(make_remote: Make, debian_image: str) -> None:
    system = make_remote(container_config(debian_image, user="1000:1000"))
    _ok(system, "write_file", path="deep/new/file.txt", content="one\n")
    out = _ok(system, "terminal", command="echo two >> deep/new/file.txt && touch deep/new/other && id -u")
    assert "[exit code 0" in out and out.startswith("1000")
    host = Path(system.workspace, "deep/new/file.txt")
    assert host.read_text() == "one\ntwo\n" and host.stat().st_uid == 1000
    assert Path(system.workspace, "deep").stat().st_uid == 1000


def test_an_image_without_bash_says_so(make_remote: Make, busybox_image: str) -> None:
    system = make_remote(container_config(busybox_image))
    failed = system.call_outcome("terminal", {"command": "true"})
    assert failed.status != "ok" and "needs bash in the image" in failed.result


def test_a_missing_engine_is_reported_with_the_fix(make_remote: Make, tmp_path: Path) -> None:
    config = container_config("localhost/anything", engine="/nonexistent/podman")
    system = make_remote(config)
    failed = system.call_outcome("terminal", {"command": "true"})
    assert failed.status != "ok" and "is not installed" in failed.result
    with pytest.raises(EnvironmentUnavailable, match="is not installed"):
        _env(system)
    home = Path(os.environ["HERMES_HOME"])
    (home / "config.toml").write_text(
        '[environment]\nkind = "container"\n[environment.container]\nimage = "x"\nengine = "/nonexistent/podman"\n'
    )
    try:
        shown = CliRunner().invoke(cli, ["env", "status"], catch_exceptions=False)
        assert shown.exit_code == 1 and "environment: container (cannot start)" in shown.output
        assert "apt install podman runc" in shown.output  # the fix
        report = json.loads(CliRunner().invoke(cli, ["plugins", "doctor", "--json"]).output)
        found = [p for p in report["problems"] if p["check"] == "environment"]
        assert found and found[0]["severity"] == "error" and "apt install podman" in found[0]["fix"]
        listed = json.loads(CliRunner().invoke(cli, ["tools", "list", "--json"]).output)
        rows = {row["name"]: row for row in listed}
        assert rows["terminal"]["available"] is False and "not installed" in json.dumps(rows["terminal"])
    finally:
        (home / "config.toml").unlink()


def test_the_limits_and_user_of_the_settings_bind_the_container(
    make_remote: Make, debian_image: str, podman: str
) -> None:
    system = make_remote(
        container_config(debian_image, memory_mb=256, cpus=0.5, pids_limit=40, user="1000:1000")
    )
    assert _ok(system, "terminal", command="id -u").startswith("1000")
    name = _env(system).container_name
    fmt = "{{.HostConfig.Memory}} {{.HostConfig.NanoCpus}} {{.HostConfig.PidsLimit}} {{.Config.User}}"
    shown = subprocess.run(
        [podman, "inspect", "--format", fmt, name], capture_output=True, text=True, timeout=60
    )
    assert shown.stdout.split() == [str(256 * 2**20), str(500_000_000), "40", "1000:1000"]
    # Forks from Python, not from bash: bash retries a refused fork with sleeps, and a child's exit
    # interrupting the last sleep made it report EINTR instead of the EAGAIN the limit gives.
    forks = (
        "import errno, os, time\n"
        "kids = []\n"
        "try:\n"
        "    for _ in range(60):\n"
        "        pid = os.fork()\n"
        "        if pid == 0:\n"
        "            time.sleep(5)\n"
        "            os._exit(0)\n"
        "        kids.append(pid)\n"
        "except OSError as e:\n"
        "    print('refused', errno.errorcode.get(e.errno), 'after', len(kids))\n"
        "for pid in kids:\n"
        "    os.waitpid(pid, 0)\n"
    )
    many = _ok(system, "terminal", command=f"python3 -c {shlex.quote(forks)}", timeout=60)
    refused = re.search(r"refused (\w+) after (\d+)", many)
    assert refused, many  # the pids limit holds inside
    assert refused[1] == "EAGAIN" and int(refused[2]) < 40
