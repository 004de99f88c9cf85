"""``[plugins.weather]`` settings, the environment fallback, the check that hides an unusable setup, and the
zero-config install (entry point, the real ``hermes`` command)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import hermes_weather
import pytest
from hermes_weather import DEFAULT_BASE_URL, DEFAULT_GEOCODING_URL, SettingsError, WeatherSettings
from pytest_httpserver import HTTPServer
from weather_support import BERLIN, forecast_body

from hermes_core import ToolSystem


def test_defaults_point_at_open_meteo() -> None:
    s = WeatherSettings.load({}, {})
    assert (s.base_url, s.geocoding_url, s.timeout) == (DEFAULT_BASE_URL, DEFAULT_GEOCODING_URL, 10.0)


def test_the_section_wins_and_the_environment_fills_in() -> None:
    env = {"HERMES_WEATHER_BASE_URL": "http://env.test", "HERMES_WEATHER_TIMEOUT": "4"}
    s = WeatherSettings.load({"base_url": "http://config.test/"}, env)
    assert (s.base_url, s.geocoding_url, s.timeout) == ("http://config.test", "http://config.test", 4.0)
    s = WeatherSettings.load({"geocoding_url": "https://g.test/x", "timeout": 2}, env)
    assert (s.base_url, s.geocoding_url, s.timeout) == ("http://env.test", "https://g.test/x", 2.0)


@pytest.mark.parametrize(
    ("section", "env"),
    [
        ({"base_url": "not a url"}, {}),
        ({"base_url": "ftp://example.com"}, {}),
        ({"base_url": "http://host:notaport"}, {}),
        ({"base_url": "http://host/?q=1"}, {}),
        ({"base_url": 5}, {}),
        ({"geocoding_url": "file:///etc/passwd"}, {}),
        ({"timeout": "soon"}, {}),
        ({"timeout": -1}, {}),
        ({"timeout": float("nan")}, {}),
        ({"colour": "blue"}, {}),
        ({}, {"HERMES_WEATHER_BASE_URL": "http://"}),
        ({}, {"HERMES_WEATHER_TIMEOUT": "0"}),
    ],
)
def test_unusable_settings_are_refused(section: dict[str, Any], env: dict[str, str]) -> None:
    with pytest.raises(SettingsError):
        WeatherSettings.load(section, env)


def test_an_unusable_setup_hides_the_tool_without_touching_the_network(
    make_tool_system: Callable[..., ToolSystem], service: HTTPServer
) -> None:
    system = make_tool_system(
        hermes_weather, config={"plugins": {"weather": {"base_url": "http//missing-colon"}}}
    )
    assert system.definitions() == []
    assert "base_url" in system.hidden()["get_weather"]
    outcome = system.call_outcome("get_weather", {"location": "Berlin"})
    assert outcome.error_kind == "unknown_tool" and "not available" in outcome.result
    assert service.log == []


def test_entry_point_and_zero_config_load(
    service: HTTPServer, hermes_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert {ep.name: ep.value for ep in entry_points(group="hermes.tools")}.get("weather") == "hermes_weather"
    monkeypatch.setenv("HERMES_LOAD_PLUGINS", "weather")
    with ToolSystem.load(plugins_dir=False) as system:
        assert [d["function"]["name"] for d in system.definitions()] == ["get_weather"]
        record = next(r for r in system.plugin_records() if r.tools == ["get_weather"])
        assert record.distribution == "hermes-weather" and record.version == hermes_weather.__version__


def test_the_real_hermes_command(service: HTTPServer, hermes_home: Path) -> None:
    """``pip install hermes-weather`` and ``hermes call get_weather`` works: here through the config file, and
    through the environment fallback."""
    hermes = shutil.which("hermes", path=str(Path(sys.executable).parent))
    assert hermes is not None, "the hermes console script is not installed next to this Python"
    url = service.url_for("/").rstrip("/")
    env = {**os.environ, "HERMES_LOAD_PLUGINS": "weather"}

    def call(*args: str, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [hermes, "call", "get_weather", *args],
            env={**env, **(extra or {})},
            capture_output=True,
            text=True,
            timeout=60,
        )

    (hermes_home / "config.toml").write_text(f'[plugins.weather]\nbase_url = "{url}"\n')
    service.expect_oneshot_request("/v1/search").respond_with_json({"results": [BERLIN]})
    service.expect_oneshot_request("/v1/forecast").respond_with_json(forecast_body(temperature=-3.5))
    done = call('{"location": "Berlin"}')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["temperature"] == -3.5
    (hermes_home / "config.toml").unlink()
    service.expect_oneshot_request("/v1/search").respond_with_json({})
    done = call("location=Nowhere", extra={"HERMES_WEATHER_BASE_URL": url})
    assert done.returncode == 1
    assert "no place named 'Nowhere' was found" in done.stdout + done.stderr
