"""Fixtures of the scheduler, agent-job and kanban-store tests: stores on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "agent"))  # the scripted model server

from pg_server import PostgresServer, server_binaries

import hermes_builtin.plugin
from hermes_core import ToolSystem


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    if server_binaries() is None:
        pytest.skip(
            "PostgreSQL's server binaries are not installed (apt-get install postgresql; .ci/run does)"
        )
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty store: a SQLite file, or a new database on the test PostgreSQL server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.new_database()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def make_system(workspace: Path) -> Iterator[Any]:
    """``make_system(config={...}, **load_kwargs)``: the built-ins, no entry points, no drop-ins, search off."""
    with ExitStack() as made:

        def make(config: dict[str, Any] | None = None, **load_kwargs: Any) -> ToolSystem:
            cfg = dict(config or {})
            cfg.setdefault("tools", {"search": "off"})
            load_kwargs.setdefault("workspace", workspace)
            load_kwargs.setdefault("plugins_dir", False)
            system = ToolSystem.load(
                load_entry_points=False, plugins=[hermes_builtin.plugin], config=cfg, **load_kwargs
            )
            return made.enter_context(system)

        yield make
