"""hermes-weather against a real HTTP server on 127.0.0.1 standing in for Open-Meteo, through the shipped
fixtures of ``hermes_core.testing`` (``make_tool_system``, ``call_tool``, ``hermes_home``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import hermes_weather
import pytest
from pytest_httpserver import HTTPServer

from hermes_core import ToolSystem


@pytest.fixture
def service(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> HTTPServer:
    """The local stand-in for Open-Meteo (the environment fallback is cleared, so only config counts)."""
    for var in ("HERMES_WEATHER_BASE_URL", "HERMES_WEATHER_GEOCODING_URL", "HERMES_WEATHER_TIMEOUT"):
        monkeypatch.delenv(var, raising=False)
    return httpserver


@pytest.fixture
def section(service: HTTPServer) -> dict[str, Any]:
    """A ``[plugins.weather]`` section pointing at the local server, with a short timeout."""
    return {"base_url": service.url_for("/").rstrip("/"), "timeout": 0.3}


@pytest.fixture
def weather(make_tool_system: Callable[..., ToolSystem], section: dict[str, Any]) -> ToolSystem:
    """A system holding only hermes-weather, configured for the local server."""
    return make_tool_system(hermes_weather, config={"plugins": {"weather": section}})
