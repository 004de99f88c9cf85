"""The file tools behind the walls (issue 19, point 4): with the path guard switched off, no symbolic link, ``..``,
absolute path or ``/proc`` magic link lets ``read_file``, ``write_file``, ``patch`` or ``search_files`` reach
outside the workspace, the session's ``/tmp`` and the granted folders, as root and as a plain user; writes to
read-only roots are refused; hidden files stay hidden inside visible trees; and the host's interpreter stays
usable read-only wherever it lives (a venv under /tmp)."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hermes_core import ToolSystem
from hermes_core.testing import unguarded

MakeSystem = Callable[..., ToolSystem]

PLAIN_UID = 65534


@dataclass
class Stage:
    workspace: Path
    outside: Path
    home: Path
    tokens: list[str]


def _token(what: str) -> str:
    return f"{what}-{secrets.token_hex(8)}"


def build_stage(root: Path, owner: int | None = None) -> Stage:
    """A workspace with links planted in it (as a command could), next to files it must never reach."""
    workspace, outside, home = root / "ws", root / "outside", root / "home"
    (outside / "dir").mkdir(parents=True)
    (home / ".ssh").mkdir(parents=True)
    workspace.mkdir()
    outside_secret, key = _token("outside-secret"), _token("ssh-key")
    (outside / "secret.txt").write_text(outside_secret + "\n")
    (outside / "dir" / "inner.txt").write_text(outside_secret + " inner\n")
    (home / ".ssh" / "id_rsa").write_text(key + "\n")
    (workspace / "ok.txt").write_text("inside\n")
    links = {
        "abs_link": outside / "secret.txt",
        "rel_link": Path("../outside/secret.txt"),
        "dir_link": outside,
        "rel_dir_link": Path("../outside"),
        "chain1": Path("chain2"),
        "chain2": Path("../outside/secret.txt"),
        "proc_link": Path(f"/proc/self/root{outside}/secret.txt"),
        "key_link": home / ".ssh" / "id_rsa",
        "shadow_link": Path("/etc/shadow"),
        "loop": Path("loop"),
    }
    for name, target in links.items():
        (workspace / name).symlink_to(target)
    if owner is not None:
        for path in [root, *root.rglob("*")]:
            os.lchown(path, owner, owner)
    return Stage(workspace, outside, home, [outside_secret, key])


def read_attempts(stage: Stage) -> list[str]:
    out = stage.outside
    return [
        "abs_link", "rel_link", "chain1", "proc_link", "key_link", "shadow_link", "loop",
        "dir_link/secret.txt", "rel_dir_link/secret.txt", "dir_link/dir/inner.txt",
        str(out / "secret.txt"), "../outside/secret.txt", "ok.txt/../../outside/secret.txt",
        f"/proc/self/root{out}/secret.txt", f"/proc/1/root{out}/secret.txt", "/proc/self/cwd/../outside/secret.txt",
        str(stage.home / ".ssh" / "id_rsa"), "/etc/shadow", "/etc/../etc/shadow", "/root/.bashrc",
    ]  # fmt: skip


def write_attempts(stage: Stage) -> list[str]:
    out = stage.outside
    return [
        "abs_link", "rel_link", "chain1", "proc_link", "key_link",
        "dir_link/new.txt", "rel_dir_link/new.txt", "dir_link/dir/new.txt",
        str(out / "new.txt"), str(out / "secret.txt"), "../outside/new.txt",
        f"/proc/self/root{out}/new.txt", str(stage.home / ".ssh" / "authorized_keys"),
        "/usr/hermes-evil.txt", "/etc/hermes-evil.conf", "/bin/hermes-evil",
    ]  # fmt: skip


def search_attempts(stage: Stage) -> list[str]:
    out = stage.outside
    return ["dir_link", "rel_dir_link", str(out), "../outside", f"/proc/self/root{out}", "abs_link",
            str(stage.home / ".ssh"), "/etc", "/"]  # fmt: skip


def attack(system: ToolSystem, stage: Stage) -> list[tuple[str, str, str]]:
    """Every file tool against every way out: ``(tool, path, result)`` for each attempt."""
    results: list[tuple[str, str, str]] = []

    def call(tool: str, path: str, args: dict[str, Any]) -> None:
        results.append((tool, path, system.call(tool, args)))

    for path in read_attempts(stage):
        call("read_file", path, {"path": path})
        call("patch", path, {"path": path, "old_string": "secret", "new_string": "stolen"})
    for path in write_attempts(stage):
        call("write_file", path, {"path": path, "content": "planted\n"})
        call(
            "patch",
            path,
            {"mode": "patch", "patch": f"*** Begin Patch\n*** Add File: {path}\n+planted\n*** End Patch"},
        )
        call(
            "patch",
            path,
            {"mode": "patch", "patch": f"*** Begin Patch\n*** Delete File: {path}\n*** End Patch"},
        )
        call(
            "patch",
            path,
            {
                "mode": "patch",
                "patch": f"*** Begin Patch\n*** Update File: {path}\n-x\n+planted\n*** End Patch",
            },
        )
    for path in search_attempts(stage):
        for pattern in ("secret", "ssh-key", "root:"):
            call("search_files", path, {"pattern": pattern, "path": path})
        call("search_files", path, {"pattern": "*", "target": "files", "path": path})
    return results


def untouched(stage: Stage, before: dict[str, bytes]) -> list[str]:
    """Files outside the workspace that changed or appeared since ``before``."""
    now = snapshot(stage)
    changed = [p for p in set(before) | set(now) if before.get(p) != now.get(p)]
    for evil in ("/usr/hermes-evil.txt", "/etc/hermes-evil.conf", "/bin/hermes-evil", "/usr/bin/hermes-evil"):
        if os.path.lexists(evil):
            changed.append(evil)
    return sorted(changed)


def snapshot(stage: Stage) -> dict[str, bytes]:
    found = {}
    for root in (stage.outside, stage.home):
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                found[str(path)] = path.read_bytes()
            elif path.is_dir():
                found[str(path)] = b"<dir>"
    return found


def leaks(results: list[tuple[str, str, str]], stage: Stage) -> list[tuple[str, str, str]]:
    shadow_line = "root:" if os.access("/etc/shadow", os.R_OK) else None
    bad = []
    for tool, path, result in results:
        listed = tool == "search_files" and ("secret.txt" in result or "inner.txt" in result)
        if (
            any(token in result for token in stage.tokens)
            or listed
            or (shadow_line and "shadow" in path and ("|root:" in result or ":root:" in result))
        ):
            bad.append((tool, path, result[:300]))
    return bad


@pytest.mark.parametrize("owner", ["root"])
def test_every_file_tool_stays_inside_with_the_guard_off(
    make_system: MakeSystem, stage: Path, backend: str, monkeypatch: pytest.MonkeyPatch, owner: str
) -> None:
    walls = build_stage(stage)
    monkeypatch.setenv("HOME", str(walls.home))
    system = unguarded(make_system(workspace=walls.workspace, config={"sandbox": {"backend": backend}}))
    before = snapshot(walls)
    results = attack(system, walls)
    assert leaks(results, walls) == []
    assert untouched(walls, before) == []
    # and nothing was written through a link into the outside: the links are still links, the files still theirs
    assert (walls.workspace / "abs_link").is_symlink() and (
        walls.outside / "secret.txt"
    ).read_text().startswith("outside-secret")
    # what the model was told is a clear refusal, not a crash
    for tool, path, result in results:
        assert "error id" not in result, (tool, path, result)
    refused = [r for _, _, r in results if "cannot be" in r or "not reachable" in r or "outside" in r]
    assert (
        len(refused) > len(results) // 3
    )  # most are refused as outside or hidden (others: not found, loops)
    # the way in still works: the workspace itself, and the session's temporary folder (/tmp; under Landlock,
    # which cannot show a folder at another path, the private folder TMPDIR names)
    assert "inside" in system.call("read_file", {"path": "ok.txt"})
    tmp = system.call("terminal", {"command": "echo ${TMPDIR:-/tmp}"}).splitlines()[0]
    assert (tmp == "/tmp") == (backend == "bwrap")
    assert system.call("write_file", {"path": f"{tmp}/scratch.txt", "content": "tmp\n"}).startswith("created")
    assert system.call("terminal", {"command": f"cat {tmp}/scratch.txt"}).startswith("tmp\n")


def test_hidden_paths_stay_hidden_inside_a_visible_tree(
    make_system: MakeSystem, stage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = stage / "home"
    (home / ".ssh").mkdir(parents=True)
    key = _token("ssh-key")
    (home / ".ssh" / "id_ed25519").write_text(key)
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text(key)
    (home / "project").mkdir()
    monkeypatch.setenv("HOME", str(home))
    system = unguarded(make_system(workspace=home))  # the workspace is the home folder itself
    for path in ("~/.ssh/id_ed25519", ".ssh/id_ed25519", ".aws/credentials", "project/../.ssh/id_ed25519"):
        result = system.call("read_file", {"path": path})
        assert key not in result and "hidden" in result, (path, result)
        wrote = system.call("write_file", {"path": path, "content": "replaced"})
        assert "hidden" in wrote, (path, wrote)
    assert (home / ".ssh" / "id_ed25519").read_text() == key
    (home / "project" / "leak").symlink_to(home / ".ssh" / "id_ed25519")
    assert "hidden" in system.call("read_file", {"path": "project/leak"})
    found = system.call("search_files", {"pattern": "ssh-key", "path": "."})
    assert key not in found and "id_ed25519" not in found
    listed = system.call("search_files", {"pattern": "*", "target": "files", "path": "."})
    assert "id_ed25519" not in listed and "credentials" not in listed
    assert (
        "project" in system.call("write_file", {"path": "project/ok.txt", "content": "fine"})
        or (home / "project" / "ok.txt").exists()
    )


def test_reads_of_read_only_roots_work_and_writes_do_not(system: ToolSystem) -> None:
    unguarded(system)
    assert "|" in system.call("read_file", {"path": "/etc/os-release"})  # a system file a command sees too
    assert "|" in system.call("read_file", {"path": "/usr/../etc/os-release"})
    # /bin is a link to /usr/bin, so its .. is /usr, as for a command
    assert "not found: /usr/etc/os-release" in system.call("read_file", {"path": "/bin/../etc/os-release"})
    result = system.call("write_file", {"path": "/etc/os-release", "content": "pwned"})
    assert "cannot be written" in result and "read-only" in result
    assert "pwned" not in Path("/etc/os-release").read_text()


# -- as a plain user ----------------------------------------------------------------------------------------

PLAIN_HOST = r"""
import json, sys
sys.path.insert(0, sys.argv[3])
import hermes_builtin.plugin
from hermes_core import ToolSystem
from hermes_core.testing import unguarded
from test_file_walls import Stage, attack

stage = Stage(**{k: __import__("pathlib").Path(v) for k, v in json.loads(sys.argv[1]).items() if k != "tokens"},
              tokens=json.loads(sys.argv[1])["tokens"])
system = unguarded(ToolSystem.load(
    load_entry_points=False, plugins_dir=False, plugins=[hermes_builtin.plugin], workspace=str(stage.workspace),
    config={"sandbox": {"backend": sys.argv[2]}},
))
print(json.dumps(attack(system, stage)))
system.close()
"""


def _plain_python() -> list[str]:
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("running as a plain user needs root (to drop to uid 65534) and setpriv")
    drop = [setpriv, f"--reuid={PLAIN_UID}", f"--regid={PLAIN_UID}", "--clear-groups"]
    probe = subprocess.run(
        [*drop, sys.executable, "-c", "import hermes_core, hermes_builtin, pluggy, regex"],
        env={"PATH": os.environ["PATH"], "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        capture_output=True,
    )
    if probe.returncode != 0:
        pytest.skip(f"uid {PLAIN_UID} cannot run this Python with hermes importable: {probe.stderr[-300:]!r}")
    return [*drop, sys.executable]


def test_as_a_plain_user_the_file_tools_stay_inside(stage: Path, backend: str) -> None:
    python = _plain_python()
    walls = build_stage(stage, owner=PLAIN_UID)  # everything readable by that user: only the walls stop it
    before = snapshot(walls)
    info = {"workspace": str(walls.workspace), "outside": str(walls.outside), "home": str(walls.home),
            "tokens": walls.tokens}  # fmt: skip
    done = subprocess.run(
        [*python, "-c", PLAIN_HOST, json.dumps(info), backend, str(Path(__file__).parent)],
        cwd=walls.workspace,
        env={
            "PATH": os.environ["PATH"],
            "HOME": str(walls.home),
            "HERMES_HOME": str(walls.home / "hermes"),
            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = [tuple(r) for r in json.loads(done.stdout.splitlines()[-1])]
    assert len(results) > 100
    assert leaks(results, walls) == []  # type: ignore[arg-type]
    # hermes's own cache of the sandbox readiness (its HERMES_HOME is in this $HOME), written by the runners' check
    own = walls.home / "hermes" / "cache" / "sandbox-readiness.json"
    kept = {str(own), str(own.parent), str(own.parent.parent)}
    assert [p for p in untouched(walls, before) if p not in kept] == []


# -- the host's interpreter, wherever it lives ------------------------------------------------------------------

VENV_HOST = r"""
import json, sys
import hermes_builtin.plugin
from hermes_core import ToolSystem
system = ToolSystem.load(load_entry_points=False, plugins_dir=False, plugins=[hermes_builtin.plugin],
                         workspace=sys.argv[1])
code = "import sys, os\nprint(sys.prefix)\nprint(2 + 2)\n"
print(system.call("execute_code", {"code": code}))
print(json.dumps(system.call("terminal", {"command": "touch \"$(dirname \"$(command -v python3)\")/planted\" "
                                          "2>&1 || echo refused; python3 -c 'print(40 + 2)'"})))
system.close()
"""


@pytest.mark.slow
def test_a_venv_under_tmp_still_runs_execute_code(tmp_path: Path, workspace: Path) -> None:
    venv = Path(f"/tmp/hermes-venv-{secrets.token_hex(4)}")
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
        python = venv / "bin" / "python"
        done = subprocess.run(
            [str(python), "-c", VENV_HOST, str(workspace)],
            env={
                "PATH": f"{venv / 'bin'}:{os.environ['PATH']}",
                "HOME": os.environ.get("HOME", "/root"),
                "HERMES_HOME": os.environ["HERMES_HOME"],
                "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
            },
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        first, second = done.stdout.strip().splitlines()[-2:]
        result = json.loads(first)
        assert result["exit_code"] == 0, result
        assert result["stdout"].splitlines() == [
            str(venv),
            "4",
        ]  # the venv's interpreter ran, inside the walls
        shell = json.loads(second)
        assert "refused" in shell and "42" in shell  # visible and usable, read-only
        assert not (venv / "bin" / "planted").exists()
    finally:
        shutil.rmtree(venv, ignore_errors=True)
