"""Fixtures for the agent tests: a workspace, and tool systems whose ``[models]`` point at a scripted server."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from agent_support import MakeSystem

import hermes_builtin.plugin
from hermes_core import ToolSystem


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def make_system(workspace: Path) -> Iterator[MakeSystem]:
    """``make_system(models={...}, config={...}, plugins=[...], **load_kwargs)``: the built-ins plus extra plugins,
    no entry points, no drop-ins; the config gets the ``[models]`` table given."""
    with ExitStack() as made:

        def make(
            models: dict[str, Any] | None = None,
            config: dict[str, Any] | None = None,
            plugins: tuple[object, ...] = (),
            **load_kwargs: Any,
        ) -> ToolSystem:
            cfg = dict(config or {})
            cfg.setdefault(
                "tools", {"search": "off"}
            )  # these tests are about the loop; tool search has its own
            if models is not None:
                cfg["models"] = models
            load_kwargs.setdefault("workspace", workspace)
            system = ToolSystem.load(
                load_entry_points=False,
                plugins_dir=False,
                plugins=[hermes_builtin.plugin, *plugins],
                config=cfg,
                **load_kwargs,
            )
            return made.enter_context(system)

        yield make
