"""Set-up for the service tools' tests: systems configured to talk to a local pytest-httpserver that speaks each
API's request and response shapes, secrets kept in files (so only the tools' own scrubbing can hide them), and a
clean environment (no HASS_* variables from the machine)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from hermes_core import ToolSystem

Configure = Callable[..., ToolSystem]


@pytest.fixture(autouse=True)
def _no_service_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HASS_URL", "HASS_TOKEN"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def secret(tmp_path: Path) -> Callable[[str], dict[str, str]]:
    """``secret(value)`` -> a ``{file = ...}`` config value holding ``value``."""
    count = iter(range(1000))

    def make(value: str) -> dict[str, str]:
        path = tmp_path / f"secret-{next(count)}.txt"
        path.write_text(value + "\n")
        return {"file": str(path)}

    return make


@pytest.fixture
def base(httpserver: HTTPServer) -> str:
    """The local server's root URL, without a trailing slash."""
    return httpserver.url_for("/").rstrip("/")


@pytest.fixture
def configure(make_builtin_system: Callable[..., ToolSystem]) -> Configure:
    """``configure(section=table, ..., approver=None)`` -> a built-ins system with those ``[plugins.*]`` tables."""

    def make(approver: Any = None, **plugins: dict[str, Any]) -> ToolSystem:
        return make_builtin_system(config={"plugins": plugins}, approver=approver)

    return make
