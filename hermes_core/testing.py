"""A pytest plugin for plugin authors (registered through the ``pytest11`` entry point as ``hermes``).

Fixtures:

- ``hermes_home``: a temporary ``HERMES_HOME`` (config, data, cache and drop-in folder live there), with the
  plugin-selection variables cleared, so nothing on the developer's machine leaks in.
- ``make_tool_system(*plugins, **load_kwargs)``: load an isolated ``ToolSystem`` with only the given plugins
  (modules, objects or import paths); installed entry points load only when ``load_entry_points=True``.
  Every system it makes is closed after the test.
- ``tool_system``: ``make_tool_system()`` with no plugins, for tests that register tools themselves.
- ``call_tool(system, name, arguments)``: run a call through the real pipeline and return the ``CallOutcome``.

```python
import my_plugin

def test_my_tool(make_tool_system, call_tool):
    system = make_tool_system(my_plugin)
    outcome = call_tool(system, "my_tool", {"city": "Oslo"})
    assert outcome.status == "ok"
```
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .decisions import CallOutcome
from .system import ToolSystem

__all__ = ["call_tool", "hermes_home", "make_tool_system", "tool_system"]

_SELECTION_VARS = (
    "HERMES_LOAD_PLUGINS",
    "HERMES_BLOCK_PLUGINS",
    "HERMES_STRICT_PLUGINS",
    "HERMES_TRACE_PLUGINS",
)


@pytest.fixture
def hermes_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``HERMES_HOME`` for this test."""
    home = tmp_path_factory.mktemp("hermes-home")
    monkeypatch.setenv("HERMES_HOME", str(home))
    for var in _SELECTION_VARS:
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def make_tool_system(hermes_home: Path) -> Iterator[Callable[..., ToolSystem]]:
    """A factory of isolated tool systems holding only the plugins a test names."""
    made: list[ToolSystem] = []

    def make(*plugins: object, **kwargs: Any) -> ToolSystem:
        kwargs.setdefault("load_entry_points", False)
        kwargs.setdefault("plugins_dir", hermes_home / "plugins")
        kwargs.setdefault("workspace", hermes_home / "workspace")
        Path(kwargs["workspace"]).mkdir(parents=True, exist_ok=True)
        system = ToolSystem.load(plugins=plugins, **kwargs)
        made.append(system)
        return system

    yield make
    for system in made:
        system.close()


@pytest.fixture
def tool_system(make_tool_system: Callable[..., ToolSystem]) -> ToolSystem:
    """An isolated, empty tool system (register tools on ``tool_system.registry``)."""
    return make_tool_system()


@pytest.fixture
def call_tool() -> Callable[..., CallOutcome]:
    """``call_tool(system, name, arguments=None, **call_kwargs) -> CallOutcome`` through the real pipeline."""

    def run(system: ToolSystem, name: str, arguments: Any = None, **kwargs: Any) -> CallOutcome:
        return system.call_outcome(name, arguments, **kwargs)

    return run
