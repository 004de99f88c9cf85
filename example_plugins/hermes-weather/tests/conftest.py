"""Fixtures for the hermes-weather tests: a real HTTP server on 127.0.0.1 standing in for Open-Meteo."""

from __future__ import annotations

from typing import Any

import pytest
from pytest_httpserver import HTTPServer


@pytest.fixture
def weather_env(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> HTTPServer:
    """Point the plugin at the local server with a short timeout, and keep HERMES_HOME in a tmp dir."""
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HERMES_WEATHER_BASE_URL", httpserver.url_for("/").rstrip("/"))
    monkeypatch.delenv("HERMES_WEATHER_GEOCODING_URL", raising=False)
    monkeypatch.setenv("HERMES_WEATHER_TIMEOUT", "0.3")
    return httpserver
