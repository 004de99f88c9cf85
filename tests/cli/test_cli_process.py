"""The installed ``hermes`` command as a real subprocess, and a plugin installed into a throw-away venv."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest
from cli_helpers import ASKER, BROKEN_IMPORT, GREET, HERMES, POLICY, hermes_process, write_plugin

pytestmark = pytest.mark.skipif(not HERMES.exists(), reason="the hermes console script is not installed")


def test_real_command_lists_tools_as_json(home: Path) -> None:
    write_plugin(home, "greet", GREET)
    proc = hermes_process("tools", "list", "--json", "--toolset", "greetings")
    assert proc.returncode == 0, proc.stderr
    assert [r["name"] for r in json.loads(proc.stdout)] == ["greet", "greet_fail"]


def test_real_command_call_exit_codes_and_piped_plain_output(home: Path) -> None:
    write_plugin(home, "greet", GREET)
    ok = hermes_process("call", "greet", "name=pipe")
    assert (ok.returncode, ok.stdout) == (0, "hello pipe\n")
    err = hermes_process("call", "greet_fail")
    assert err.returncode == 1
    listed = hermes_process("plugins", "list")
    assert "\x1b[" not in listed.stdout  # no colours or boxes when piped
    assert any(line.startswith("dropin:greet\t") for line in listed.stdout.splitlines())


def test_real_command_broken_config_and_broken_plugin(home: Path) -> None:
    (home / "config.toml").write_text('[limits]\nmax_result_chars = "big"\n')
    proc = hermes_process("tools", "list")
    assert proc.returncode == 2
    assert f"{home / 'config.toml'}:2: key 'limits.max_result_chars' must be an integer" in proc.stderr
    (home / "config.toml").write_text("")
    write_plugin(home, "broken", BROKEN_IMPORT)
    doctor = hermes_process("plugins", "doctor", "--json")
    assert doctor.returncode == 1
    report = json.loads(doctor.stdout)
    assert any(p["plugin"] == "dropin:broken" and p["check"] == "import" for p in report["problems"])


def test_module_entry_runs_too(home: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "hermes_core.cli", "config", "path"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == str(home / "config.toml")


def _make_wheel(root: Path, dist: str, entry: str, requires: str) -> Path:
    """Build a tiny plugin wheel by hand (a wheel is a zip with a dist-info folder): no build backend needed."""
    module = dist.replace("-", "_")
    source = textwrap.dedent(
        f"""
        from hermes_core import hookimpl

        @hookimpl
        def register_tools(registry):
            registry.register(
                name="{entry}_ping",
                toolset="{entry}",
                schema={{"name": "{entry}_ping", "description": "Pong.",
                         "parameters": {{"type": "object", "properties": {{}}}}}},
                handler=lambda: "pong",
            )
        """
    )
    info = f"{module}-1.2.3.dist-info"
    files = {
        f"{module}/__init__.py": source,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.2.3\nRequires-Dist: {requires}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: hermes-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": f"[hermes.tools]\n{entry} = {module}\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    root.mkdir(parents=True, exist_ok=True)
    wheel = root / f"{module}-1.2.3-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return wheel


@pytest.mark.slow
def test_plugin_installed_in_a_throwaway_venv_is_listed_and_checked(home: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # the project's environment (hermes-tools, editable, and its dependencies) is visible through a .pth file
    project_site = sysconfig.get_paths()["purelib"]
    (site / "project-env.pth").write_text(f"import site; site.addsitedir({project_site!r})\n")
    good = _make_wheel(tmp_path / "dist", "hermes-ping", "ping", "hermes-tools>=0.1,<1")
    future = _make_wheel(tmp_path / "dist", "hermes-future", "future", "hermes-tools>=9")
    pip = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            str(good),
            str(future),
        ],
        timeout=300,
        capture_output=True,
        text=True,
    )
    assert pip.returncode == 0, pip.stderr
    env = {**os.environ, "HERMES_LOAD_PLUGINS": "builtin,ping,future"}

    def hermes(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(python), "-m", "hermes_core.cli", *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )

    listed = hermes("plugins", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert rows["ping"]["distribution"] == "hermes-ping" and rows["ping"]["version"] == "1.2.3"
    assert rows["ping"]["source"] == "entry point" and rows["ping"]["tools"] == ["ping_ping"]
    assert hermes("call", "ping_ping").stdout.strip() == "pong"
    doctor = hermes("plugins", "doctor", "--json")
    assert doctor.returncode == 1
    report = json.loads(doctor.stdout)
    versions = [p for p in report["problems"] if p["check"] == "version"]
    assert [p["plugin"] for p in versions] == ["future"]
    assert "requires hermes-tools>=9" in versions[0]["message"]
    ping = next(p for p in report["plugins"] if p["name"] == "ping")
    assert ping["import_check"]["ok"] is True
    # the project's own environment does not see the throw-away install
    assert "ping" not in {
        r["name"] for r in json.loads(hermes_process("plugins", "list", "--all", "--json").stdout)
    }


def _call_on_a_terminal(answer: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``hermes call ...`` with a pseudo-terminal as stdin (stdout stays a pipe) and type ``answer``."""
    import pty

    master, slave = pty.openpty()
    try:
        os.write(master, answer.encode())
        return subprocess.run(
            [str(HERMES), "call", *args], stdin=slave, capture_output=True, text=True, timeout=60
        )
    finally:
        os.close(slave)
        os.close(master)


def test_terminal_approval_and_questions(home: Path) -> None:
    write_plugin(home, "greet", GREET)
    write_plugin(home, "policy", POLICY)
    write_plugin(home, "asker", ASKER)
    approved = _call_on_a_terminal("o\n", "greet", "name=root")
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout == "hello root\n"
    assert "greeting root needs a human" in approved.stderr  # the approver asked on stderr
    refused = _call_on_a_terminal("d\n", "greet", "name=root")
    assert refused.returncode == 4
    asked = _call_on_a_terminal("2\n", "pick")
    assert asked.returncode == 0, asked.stderr
    assert asked.stdout == "you chose green\n"
    assert "Pick a colour" in asked.stderr and "2. green" in asked.stderr


SLOW_CHECK = """
import time
from hermes_core import registry

def thirty_seconds() -> bool:
    time.sleep(30)
    return True

registry.register(
    name="slow_service",
    toolset="slow",
    schema={"name": "slow_service", "description": "Behind a slow check.",
            "parameters": {"type": "object", "properties": {}}},
    handler=lambda: "served",
    check_fn=thirty_seconds,
)
"""


def test_a_30_second_check_leaves_other_calls_and_the_exit_at_their_usual_time(home: Path) -> None:
    """A check runs off the call path with a deadline: it neither delays another tool nor the process exit."""
    import time

    (home / "workspace" / "notes.txt").write_text("one line\n")

    def timed_call() -> tuple[float, subprocess.CompletedProcess[str]]:
        started = time.perf_counter()
        proc = hermes_process("call", "read_file", "path=notes.txt", cwd=home / "workspace")
        return time.perf_counter() - started, proc

    # a deadline far above what a loaded machine adds to a process start, so waiting for it cannot pass unseen
    (home / "config.toml").write_text("[tools]\ncheck_timeout = 6\n")
    usual, plain = timed_call()
    assert plain.returncode == 0 and "one line" in plain.stdout, plain.stderr
    write_plugin(home, "slow", SLOW_CHECK)
    took, slowed = timed_call()
    assert slowed.returncode == 0 and "one line" in slowed.stdout, slowed.stderr
    assert took < usual + 4, (took, usual)  # not the 30 s of the check, nor its 6 s deadline
    shown = hermes_process("tools", "list", "--json", "--toolset", "slow")
    [row] = json.loads(shown.stdout)
    assert row["available"] is False and "timed out after 6 s" in row["reason"] and "unknown" in row["reason"]
