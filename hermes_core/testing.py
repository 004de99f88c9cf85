"""A pytest plugin for plugin authors (registered through the ``pytest11`` entry point as ``hermes``).

Fixtures:

- ``hermes_home``: a temporary ``HERMES_HOME`` (config, data, cache and drop-in folder live there), with the
  plugin-selection variables cleared, so nothing on the developer's machine leaks in.
- ``make_tool_system(*plugins, **load_kwargs)``: load an isolated ``ToolSystem`` with only the given plugins
  (modules, objects or import paths); installed entry points load only when ``load_entry_points=True``.
  Every system it makes is closed after the test.
- ``tool_system``: ``make_tool_system()`` with no plugins, for tests that register tools themselves.
- ``call_tool(system, name, arguments)``: run a call through the real pipeline and return the ``CallOutcome``.

Helpers for security tests (plain functions, never reachable by a model):

- ``unguarded(system)``: switch the command and path guards and every approval off for that system, so a
  test can prove what the sandbox alone stops.
- ``processes_with_arg(arg)``: host pids of live processes with ``arg`` as one of their arguments (use a
  unique one, e.g. ``sleep 60.<random digits>``), to prove nothing outlived a call.

```python
import my_plugin

def test_my_tool(make_tool_system, call_tool):
    system = make_tool_system(my_plugin)
    outcome = call_tool(system, "my_tool", {"city": "Oslo"})
    assert outcome.status == "ok"
```
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .decisions import CallOutcome
from .system import ToolSystem

__all__ = [
    "call_tool",
    "hermes_home",
    "make_tool_system",
    "processes_gone",
    "processes_with_arg",
    "sleep_marker",
    "tool_system",
    "unguarded",
]

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


class _NoGuard:
    """A security gate that allows everything: commands, paths and approvals (tests only)."""

    def guard_command(self, command: str, context: Any) -> Any:
        from .security import CommandVerdict

        return CommandVerdict(command)

    def guard_path(self, path: str | Path, op: str, context: Any) -> Path:
        raw = Path(path).expanduser()
        return Path(os.path.realpath(raw if raw.is_absolute() else Path(context.workspace) / raw))

    def request_approval(self, kind: str, subject: str, reason: str, context: Any) -> None:
        return None

    def classify_command(self, command: str, workspace: Any) -> Any:
        from .security import CommandVerdict

        return CommandVerdict(command)


def unguarded(system: ToolSystem) -> ToolSystem:
    """Turn ``system``'s command guard, path guard and approvals off (for tests of the sandbox alone)."""
    system.guard = _NoGuard()
    return system


def processes_with_arg(arg: str) -> list[int]:
    """Host pids of live (non-zombie) processes that have ``arg`` as one whole argument."""
    wanted = arg.encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        if wanted in argv and stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] not in (b"Z", b"X"):
            found.append(int(name))
    return found


def sleep_marker(seconds: int = 60) -> str:
    """A unique ``sleep`` duration (``60.<nine random digits>``): as an argument it finds the process on the
    host with ``processes_with_arg``, whatever its pid inside a PID namespace."""
    import secrets

    return f"{seconds}.{secrets.randbelow(10**9):09d}"


def processes_gone(arg: str, seconds: float = 3.0) -> bool:
    """True once no live host process has ``arg`` as an argument (waiting up to ``seconds``)."""
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not processes_with_arg(arg):
            return True
        time.sleep(0.02)
    return False
