"""Fixtures of the environment tests: tool systems with the built-ins in a workspace of their own, and a stage
outside the host's /tmp (the session sees the host's /tmp as its own private one, so an "outside" folder must
lie elsewhere to be outside for real)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

import hermes_builtin.plugin
from hermes_core import ToolSystem
from hermes_core.sandbox import choose_backend

MakeSystem = Callable[..., ToolSystem]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def make_system(workspace: Path) -> Iterator[MakeSystem]:
    """``make_system(*extra_plugins, **load_kwargs)``: the built-ins in ``workspace`` (closed after the test)."""
    with ExitStack() as made:

        def make(*extra: object, **kwargs: Any) -> ToolSystem:
            kwargs.setdefault("workspace", workspace)
            system = ToolSystem.load(
                load_entry_points=False, plugins_dir=False, plugins=[hermes_builtin.plugin, *extra], **kwargs
            )
            return made.enter_context(system)

        yield make


@pytest.fixture
def system(make_system: MakeSystem) -> ToolSystem:
    return make_system()


@pytest.fixture(params=["bwrap", "landlock"])
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    choice = choose_backend(name)
    if choice.backend is None:
        pytest.skip(f"the {name} backend is not usable on this machine: {choice.reason}")
    return name


@pytest.fixture
def stage() -> Iterator[Path]:
    """A folder outside the host's /tmp (under /var/tmp), readable by every user, removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="hermes-env-", dir="/var/tmp"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)
