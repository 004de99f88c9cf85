"""Shared set-up for the built-in tool tests: a workspace, a fake user home, and systems that load the real
built-ins plugin exactly as a host would. Every system a test makes is closed when the test ends.

``tests/conftest.py`` already gives each test its own ``HERMES_HOME``; the workspace and the fake home are
siblings in the test's ``tmp_path``, so both lie outside it (and ``../user`` from the workspace is the home).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

import hermes_builtin.plugin
from hermes_core import ToolSystem

MakeSystem = Callable[..., ToolSystem]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace folder, ``tmp_path / "ws"``."""
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``HOME`` pointed at ``tmp_path / "user"`` (with an empty ``.ssh``), so guarded dotfiles and keys are
    the test's own."""
    home = tmp_path / "user"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def make_builtin_system(workspace: Path) -> Iterator[MakeSystem]:
    """A factory: ``make_builtin_system(*extra_plugins, **load_kwargs)`` loads the built-ins plugin (plus any
    extra plugin objects) with no entry points and no drop-in folder, in ``workspace`` unless told otherwise.
    """
    with ExitStack() as made:

        def make(*extra_plugins: object, **load_kwargs: Any) -> ToolSystem:
            load_kwargs.setdefault("workspace", workspace)
            system = ToolSystem.load(
                load_entry_points=False,
                plugins_dir=False,
                plugins=[hermes_builtin.plugin, *extra_plugins],
                **load_kwargs,
            )
            return made.enter_context(system)

        yield make


@pytest.fixture
def builtin_system(make_builtin_system: MakeSystem) -> ToolSystem:
    """A system with every built-in tool, default configuration, in ``workspace``."""
    return make_builtin_system()
