"""Fixtures of the sandbox tests: the backend under test, the stage (``sandbox_stage.Scene``) and a victim."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_stage import BACKENDS, Scene, load_system, sleep_marker, token

from hermes_core.sandbox import choose_backend


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    choice = choose_backend(name)
    if choice.backend is None:
        pytest.skip(f"the {name} backend is not usable on this machine: {choice.reason}")
    return name


@pytest.fixture
def scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str) -> Iterator[Scene]:
    home = tmp_path / "home"
    planted = {
        ".ssh/id_rsa": f"ssh-key-{token()}",
        ".aws/credentials": f"aws-{token()}",
        ".netrc": f"netrc-{token()}",
    }
    for rel, value in planted.items():
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value + "\n")
    (home / ".bashrc").write_text("# rc\n")
    monkeypatch.setenv("HOME", str(home))
    outside = tmp_path / "outside"
    outside.mkdir()
    sentinel = outside / "sentinel.txt"
    sentinel.write_text("sentinel\n")
    sentinel.chmod(0o644)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    hermes_home = Path(os.environ["HERMES_HOME"])
    (hermes_home / "data").mkdir(parents=True, exist_ok=True)
    (hermes_home / "data" / "state.json").write_text('{"state": "intact"}')
    config = hermes_home / "config.toml"
    marker = f"config-{token()}"
    system = load_system(workspace, backend, config, marker)
    yield Scene(
        workspace=workspace,
        home=home,
        outside=outside,
        sentinel=sentinel,
        hermes_home=hermes_home,
        config=config,
        secrets=planted,
        config_marker=marker,
        system=system,
        backend=backend,
    )
    system.close()


@pytest.fixture
def victim() -> Iterator[tuple[subprocess.Popen[bytes], str, str]]:
    """A sacrificial host process (``sleep``) with a planted secret in its environment: (process, marker, secret)."""
    marker = sleep_marker()
    secret = f"host-secret-{token()}"
    proc = subprocess.Popen(
        ["sleep", marker], env={"PATH": os.environ["PATH"], "PLANTED_HOST_SECRET": secret}
    )
    yield proc, marker, secret
    proc.kill()
    proc.wait()


@pytest.fixture
def plain_root() -> Iterator[Path]:
    """A folder the plain user owns and can reach (pytest's own temporary folders are private to root)."""
    import shutil
    import tempfile

    from sandbox_stage import PLAIN_UID

    root = Path(tempfile.mkdtemp(prefix="hermes-plain-"))
    root.chmod(0o755)
    os.chown(root, PLAIN_UID, PLAIN_UID)
    yield root
    shutil.rmtree(root, ignore_errors=True)
