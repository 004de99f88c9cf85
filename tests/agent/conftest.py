"""Fixtures for the agent tests: a workspace, and tool systems whose ``[models]`` point at a scripted server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from scripted_llm import ScriptedLLM

import hermes_builtin.plugin
from hermes_core import ToolSystem

MakeSystem = Callable[..., ToolSystem]

# (provider, stream): every loop test runs against each wire format
WIRES = [("openai", True), ("openai", False), ("anthropic", True), ("anthropic", False)]
WIRE_IDS = ["openai-sse", "openai-json", "anthropic-sse", "anthropic-json"]


def model_table(
    llm: ScriptedLLM, provider: str = "openai", stream: bool = True, **extra: Any
) -> dict[str, Any]:
    """A ``[models.NAME]`` table for the scripted server (retries fast, no real key)."""
    url = llm.anthropic_url if provider == "anthropic" else llm.openai_url
    table: dict[str, Any] = {
        "provider": provider,
        "base_url": url,
        "model": f"scripted-{provider}",
        "stream": stream,
        "timeout": 10.0,
        "max_retries": 2,
    }
    table.update(extra)
    return table


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
