"""A tool system's sandbox readiness is kept across processes in hermes's cache folder: a fresh process uses a
kept answer while its key holds (without loading the sandbox), and anything in the key that changes (the bwrap
binary, the [sandbox] table, the workspace) makes it probe again, so a bwrap that broke since hides the runners.
A process that has loaded the sandbox works the answer out itself and corrects a kept one. Each case is a fresh
process with a fake ``PATH``, as the backend probe is cached per process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

BROKEN = "#!/bin/sh\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n"
RUNNERS = ("terminal", "process", "execute_code")

ASK = """
import json, sys
import hermes_builtin.plugin
from hermes_core import ToolSystem
from hermes_core.sandbox import readiness

system = ToolSystem.load(load_entry_points=False, plugins_dir=False, plugins=[hermes_builtin.plugin],
                         workspace=sys.argv[1], config=sys.argv[2])
if sys.argv[3] == "command":  # a command through the sandbox's own API: its walls need no check
    from hermes_core.sandbox import sandbox_for

    done = sandbox_for(system).run(["/usr/bin/true"], timeout=60)
    assert done.exit_code == 0, done
hidden = system.hidden()
ready = readiness(system)
print(json.dumps({"ok": ready.ok, "reason": ready.reason, "hidden": {n: hidden.get(n) for n in sys.argv[4:]},
                  "sandbox_loaded": "hermes_core.sandbox._sandbox" in sys.modules}))
system.close()
"""


@pytest.fixture
def fake_path(tmp_path: Path) -> Path:
    """A ``PATH`` whose bwrap is a link to the real one (so a test can replace it), with bash and ``true``."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in ("bwrap", "bash", "true"):
        real = shutil.which(name)
        if real is None:
            pytest.skip(f"{name} is not installed (.ci/run installs bubblewrap)")
        (folder / name).symlink_to(real)
    return folder


def _ask(
    tmp_path: Path,
    path: Path,
    config: str = '[sandbox]\nbackend = "bwrap"\n',
    workspace: Path | None = None,
    then: str = "ask",
) -> dict[str, object]:
    (tmp_path / "config.toml").write_text(config)
    if workspace is None:
        workspace = tmp_path / "ws"
        workspace.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env.update(PATH=str(path), HERMES_HOME=str(tmp_path / "home"))
    done = subprocess.run(
        [sys.executable, "-c", ASK, str(workspace), str(tmp_path / "config.toml"), then, *RUNNERS],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answer: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return answer


def _cache(tmp_path: Path) -> Path:
    return tmp_path / "home" / "cache" / "sandbox-readiness.json"


def _tamper(tmp_path: Path, **changes: object) -> None:
    data = json.loads(_cache(tmp_path).read_text())
    data.update(changes)
    _cache(tmp_path).write_text(json.dumps(data))


def test_a_kept_answer_is_used_while_its_key_holds(tmp_path: Path, fake_path: Path) -> None:
    first = _ask(tmp_path, fake_path)
    assert first["ok"] is True and first["hidden"] == dict.fromkeys(RUNNERS)
    _tamper(tmp_path, ok=False, reason="the kept answer", fix="")
    second = _ask(tmp_path, fake_path)  # same key: the kept answer, and the sandbox is not even loaded
    assert second["reason"] == "the kept answer" and second["sandbox_loaded"] is False
    hidden = second["hidden"]
    assert isinstance(hidden, dict) and all("the kept answer" in hidden[n] for n in RUNNERS), hidden


def test_a_process_that_ran_a_command_corrects_a_kept_answer(tmp_path: Path, fake_path: Path) -> None:
    _ask(tmp_path, fake_path)
    _tamper(tmp_path, ok=False, reason="the kept answer", fix="")
    after = _ask(tmp_path, fake_path, then="command")
    assert after["ok"] is True and after["sandbox_loaded"] is True
    assert json.loads(_cache(tmp_path).read_text())["ok"] is True


def test_a_bwrap_that_broke_since_is_probed_again(tmp_path: Path, fake_path: Path) -> None:
    assert _ask(tmp_path, fake_path)["ok"] is True
    (fake_path / "bwrap").unlink()
    (fake_path / "bwrap").write_text(BROKEN)
    (fake_path / "bwrap").chmod(0o755)
    after = _ask(tmp_path, fake_path)
    assert after["ok"] is False and "cannot create namespaces" in str(after["reason"]), after
    hidden = after["hidden"]
    assert isinstance(hidden, dict) and all("cannot create namespaces" in hidden[n] for n in RUNNERS), hidden
    assert json.loads(_cache(tmp_path).read_text())["ok"] is False


def test_a_removed_bwrap_is_probed_again(tmp_path: Path, fake_path: Path) -> None:
    assert _ask(tmp_path, fake_path)["ok"] is True
    (fake_path / "bwrap").unlink()
    assert "not installed" in str(_ask(tmp_path, fake_path)["reason"])


def test_a_changed_sandbox_table_or_workspace_is_probed_again(tmp_path: Path, fake_path: Path) -> None:
    assert _ask(tmp_path, fake_path)["ok"] is True
    key = json.loads(_cache(tmp_path).read_text())["key"]
    table = _ask(tmp_path, fake_path, '[sandbox]\nbackend = "bwrap"\nread_only = ["/"]\n')
    assert table["ok"] is False and "a configured sandbox path is /" in str(table["reason"]), table
    assert json.loads(_cache(tmp_path).read_text())["key"] != key
    root = _ask(tmp_path, fake_path, workspace=Path("/"))
    assert root["ok"] is False and "the workspace is /" in str(root["reason"]), root


def test_an_answer_older_than_an_hour_is_probed_again(tmp_path: Path, fake_path: Path) -> None:
    _ask(tmp_path, fake_path)
    data = json.loads(_cache(tmp_path).read_text())
    _tamper(tmp_path, ok=False, reason="the kept answer", fix="", at=float(data["at"]) - 3601)
    assert _ask(tmp_path, fake_path)["ok"] is True


def test_the_checks_of_one_selection_share_one_answer_for_a_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """execute_code, terminal and process ask within milliseconds: the key is worked out once for them."""
    import hermes_builtin.plugin
    import hermes_core.sandbox._ready as ready_module
    from hermes_core import ToolSystem
    from hermes_core.sandbox import readiness

    workspace = tmp_path / "ws"
    workspace.mkdir()
    system = ToolSystem.load(
        load_entry_points=False, plugins_dir=False, plugins=[hermes_builtin.plugin], workspace=workspace
    )
    keys: list[str] = []
    real_key = ready_module.cache_key

    def counted(owner: object) -> str:
        keys.append(real_key(owner))
        return keys[-1]

    monkeypatch.setattr(ready_module, "cache_key", counted)
    clock = [1000.0]
    monkeypatch.setattr(ready_module.time, "monotonic", lambda: clock[0])
    # whether "the sandbox is loaded" is read from a stand-in module, which the test loads when it chooses
    fake = "hermes_test_stand_in_sandbox"
    monkeypatch.setattr(ready_module, "_SANDBOX_MODULE", fake)
    try:
        first = readiness(system)
        assert readiness(system) is first and len(keys) == 1
        clock[0] += 1.5  # a second later the key is worked out again
        assert readiness(system) == first and len(keys) == 2
        other = ToolSystem.load(
            load_entry_points=False, plugins_dir=False, plugins=[hermes_builtin.plugin], workspace=workspace
        )
        readiness(other)  # another system has answers of its own
        assert len(keys) == 3
        other.close()
        # the sandbox loaded since (a command ran): that process works the answer out itself, at once
        monkeypatch.setitem(sys.modules, fake, types.ModuleType(fake))
        assert readiness(system) == first and len(keys) == 4
        assert readiness(system) == first and len(keys) == 4
    finally:
        system.close()
