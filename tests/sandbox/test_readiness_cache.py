"""A tool system's sandbox readiness is kept across processes in hermes's cache folder: a kept answer is used
while its key holds, and anything in the key that changes (the bwrap binary, the [sandbox] table, the workspace)
makes it probe again, so a bwrap that broke since hides the runners. The per-process probe cache is reset
between systems here, as a fresh process would have it."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

import hermes_builtin.plugin
from hermes_core import ToolSystem
from hermes_core.sandbox import _bwrap, readiness

BROKEN = "#!/bin/sh\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n"


@pytest.fixture
def fake_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A ``PATH`` whose bwrap is a link to the real one (so a test can replace it), with bash and ``true``."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in ("bwrap", "bash", "true"):
        real = shutil.which(name)
        if real is None:
            pytest.skip(f"{name} is not installed (.ci/run installs bubblewrap)")
        (folder / name).symlink_to(real)
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.setattr(_bwrap, "_probe_result", None)
    yield folder
    _bwrap.probe_bwrap(refresh=True)  # later tests in this worker see the real PATH's answer again


def _system(
    tmp_path: Path, config: str = '[sandbox]\nbackend = "bwrap"\n', workspace: Path | None = None
) -> ToolSystem:
    (tmp_path / "config.toml").write_text(config)
    if workspace is None:
        workspace = tmp_path / "ws"
        workspace.mkdir(exist_ok=True)
    _bwrap._probe_result = None  # a fresh process would probe again
    return ToolSystem.load(
        load_entry_points=False,
        plugins_dir=False,
        plugins=[hermes_builtin.plugin],
        workspace=workspace,
        config=tmp_path / "config.toml",
    )


def _kept(system: ToolSystem) -> dict[str, object]:
    data: dict[str, object] = json.loads((system.cache_dir / "sandbox-readiness.json").read_text())
    return data


def test_a_kept_answer_is_used_while_its_key_holds(tmp_path: Path, fake_path: Path) -> None:
    with _system(tmp_path) as first:
        assert "terminal" in first.available()  # every check has answered (and kept its answer)
        assert readiness(first).ok
        assert _kept(first)["ok"] is True
        cache = first.cache_dir / "sandbox-readiness.json"
    data = json.loads(cache.read_text())
    data.update(ok=False, reason="the kept answer", fix="")
    cache.write_text(json.dumps(data))
    with _system(tmp_path) as second:  # same key: the kept answer, no probe
        assert readiness(second).reason == "the kept answer"
        assert "the kept answer" in second.hidden()["terminal"]


def test_a_bwrap_that_broke_since_is_probed_again(tmp_path: Path, fake_path: Path) -> None:
    with _system(tmp_path) as first:
        assert readiness(first).ok
        assert "terminal" in first.available()
    (fake_path / "bwrap").unlink()
    (fake_path / "bwrap").write_text(BROKEN)
    (fake_path / "bwrap").chmod(0o755)
    with _system(tmp_path) as second:
        ready = readiness(second)
        assert not ready.ok and "cannot create namespaces" in ready.reason, ready
        hidden = second.hidden()
        for name in ("terminal", "process", "execute_code"):
            assert "cannot create namespaces" in hidden[name], hidden.get(name)
        assert _kept(second)["ok"] is False


def test_a_removed_bwrap_is_probed_again(tmp_path: Path, fake_path: Path) -> None:
    with _system(tmp_path) as first:
        assert readiness(first).ok
    (fake_path / "bwrap").unlink()
    with _system(tmp_path) as second:
        assert "not installed" in readiness(second).reason


def test_a_changed_sandbox_table_or_workspace_is_probed_again(tmp_path: Path, fake_path: Path) -> None:
    with _system(tmp_path) as first:
        assert readiness(first).ok
        key = _kept(first)["key"]
    with _system(tmp_path, '[sandbox]\nbackend = "bwrap"\nread_only = ["/"]\n') as second:
        ready = readiness(second)
        assert not ready.ok and "a configured sandbox path is /" in ready.reason, ready
        assert _kept(second)["key"] != key
    with _system(tmp_path, workspace=Path("/")) as third:
        ready = readiness(third)
        assert not ready.ok and "the workspace is /" in ready.reason, ready
