"""Helpers of the sandbox's attack tests (fixtures in conftest.py). The stage: a fake home with planted
secrets, a sentinel folder outside the workspace, hermes's own files, a sacrificial host process, and a
tool system with every guard switched off (``hermes_core.testing.unguarded``), so what is stopped is
stopped by the walls alone.

Every test runs under each backend the machine has (``backend``), through each channel that runs code
(``channel``: terminal, a background process, execute_code, a cron job).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hermes_builtin.plugin
from hermes_core import ToolSystem
from hermes_core.testing import processes_gone, unguarded
from hermes_core.testing import sleep_marker as testing_sleep_marker

BACKENDS = ("bwrap", "landlock")
CHANNELS = ("terminal", "process", "execute_code", "cron")


def token() -> str:
    return secrets.token_hex(8)


def sleep_marker() -> str:
    return testing_sleep_marker(300)


def gone(marker: str, seconds: float = 5.0) -> bool:
    return processes_gone(marker, seconds)


@dataclass
class Scene:
    """Everything an attack test needs to know about the stage."""

    workspace: Path
    home: Path
    outside: Path
    sentinel: Path
    hermes_home: Path
    config: Path
    secrets: dict[str, str]
    config_marker: str
    system: ToolSystem
    backend: str

    def shell(self, channel: str, command: str, timeout: int = 60) -> str:
        """Run ``command`` with bash through ``channel`` and return everything the model would see."""
        return run_shell(self.system, channel, command, timeout)


def run_shell(system: ToolSystem, channel: str, command: str, timeout: int = 60) -> str:
    if channel == "terminal":
        return system.call("terminal", {"command": command, "timeout": timeout})
    if channel == "process":
        started = system.call("terminal", {"command": command, "background": True})
        assert "process_id=" in started, started
        pid_key = started.split("process_id=")[1].split(" ")[0]
        waited = system.call("process", {"action": "wait", "process_id": pid_key, "timeout": timeout})
        assert '"exited"' in waited.splitlines()[0], waited
        return system.call("process", {"action": "log", "process_id": pid_key, "limit": 2000})
    if channel == "execute_code":
        code = (  # output through a file: children left running would keep a pipe open
            "import subprocess, tempfile\n"
            "with tempfile.TemporaryFile() as out:\n"
            f"    subprocess.run(['bash', '-c', {command!r}], stdout=out, stderr=subprocess.STDOUT)\n"
            "    out.seek(0)\n"
            "    print(out.read().decode(errors='replace'))\n"
        )
        result = system.call("execute_code", {"code": code, "timeout": timeout})
        data: dict[str, Any] = json.loads(result)
        assert "error" not in data, data
        return str(data["stdout"]) + str(data["stderr"])
    if channel == "cron":
        created = system.call(
            "cronjob",
            {
                "action": "create",
                "name": "attack",
                "schedule": "every:1h",
                "tool": "terminal",
                "arguments": {"command": command, "timeout": timeout},
            },
        )
        assert created.startswith("Created job"), created
        job_id = created.split()[2]
        ran = system.call("cronjob", {"action": "run", "job_id": job_id})
        system.call("cronjob", {"action": "remove", "job_id": job_id})
        return ran
    raise AssertionError(f"unknown channel {channel}")


def load_system(workspace: Path, backend: str, config_path: Path, marker: str, **sandbox: Any) -> ToolSystem:
    """A tool system with every guard off, sandboxed by ``backend``, its config file at ``config_path``."""
    extra = "".join(f"{key} = {json.dumps(value)}\n" for key, value in sandbox.items())
    config_path.write_text(
        f'# {marker}\n[sandbox]\nbackend = "{backend}"\n{extra}[plugins.cronjob]\ncommands = "allow"\n'
    )
    system = ToolSystem.load(
        load_entry_points=False,
        plugins_dir=False,
        plugins=[hermes_builtin.plugin],
        workspace=workspace,
        config=config_path,
    )
    return unguarded(system)


def state_of(pid: int) -> str:
    """The process state letter (R, S, T, Z...) or "" when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return ""
    return stat[stat.rfind(b")") + 2 :].split()[0].decode()


# -- a host run by a plain user (uid 65534), for the attacks that must fail without root too -------------------

PLAIN_UID = 65534
PLAIN_HOST = r"""
import sys
import hermes_builtin.plugin
from hermes_core import ToolSystem
from hermes_core.testing import unguarded

workspace, backend, command, network = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
system = unguarded(ToolSystem.load(
    load_entry_points=False, plugins_dir=False, plugins=[hermes_builtin.plugin], workspace=workspace,
    config={"sandbox": {"backend": backend, "network": network}},
))
print(system.call("terminal", {"command": command, "timeout": 60}))
system.close()
"""


def plain_python() -> list[str]:
    """A command line that starts this test's Python as uid 65534 with hermes importable, or skips."""
    import pytest

    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("running as a plain user needs root (to drop to uid 65534) and setpriv")
    drop = [setpriv, f"--reuid={PLAIN_UID}", f"--regid={PLAIN_UID}", "--clear-groups"]
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for python in (sys.executable, shutil.which(version) or ""):
        if not python:
            continue
        probe = subprocess.run(
            [*drop, python, "-c", "import hermes_core, hermes_builtin, pluggy"],
            env={"PATH": os.environ["PATH"], "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
            capture_output=True,
        )
        if probe.returncode == 0:
            return [*drop, python]
    pytest.skip(f"no {version} that uid {PLAIN_UID} may run with hermes importable (its folders are private)")


def run_as_plain_user(
    root: Path, backend: str, files: dict[str, str], command: str, network: str = "on"
) -> str:
    """Run ``command`` through ``terminal`` in a tool system (every guard off) hosted by uid 65534, in a
    workspace below ``root`` holding ``files``; returns what the model would see."""
    import pytest

    from hermes_core.sandbox import choose_backend

    if choose_backend(backend).backend is None:
        pytest.skip(f"the {backend} backend is not usable here")
    python = plain_python()
    workspace, home = root / "ws", root / "home"
    for folder in (workspace, home):
        folder.mkdir(exist_ok=True)
        os.chown(folder, PLAIN_UID, PLAIN_UID)
    for name, text in files.items():
        (workspace / name).write_text(text)
        os.chown(workspace / name, PLAIN_UID, PLAIN_UID)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "HERMES_HOME": str(home / "hermes"),
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
    }
    done = subprocess.run(
        [*python, "-c", PLAIN_HOST, str(workspace), backend, command, network],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout
