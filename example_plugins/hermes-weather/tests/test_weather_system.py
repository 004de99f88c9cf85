"""hermes-weather through ``ToolSystem``: definitions, check_fn gating, the entry point and every error path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path

import hermes_weather
import pytest
from pytest_httpserver import HTTPServer
from weather_support import BERLIN, forecast_body
from werkzeug import Request, Response

from hermes_core import ToolSystem


@pytest.fixture
def system(weather_env: HTTPServer) -> Iterator[ToolSystem]:
    with ToolSystem.load(load_entry_points=False, plugins=[hermes_weather], plugins_dir=False) as sys_:
        yield sys_


def names(system: ToolSystem) -> list[str]:
    return [d["function"]["name"] for d in system.definitions()]


def test_registered_and_visible(system: ToolSystem) -> None:
    assert names(system) == ["get_weather"]
    entry = system.registry["get_weather"]
    assert entry.toolset == "weather" and entry.requires_env == () and entry.parallel_safe
    assert entry.plugin is not None and "weather" in entry.plugin
    params = system.definitions()[0]["function"]["parameters"]
    assert params["required"] == ["location"]


def test_check_fn_hides_the_tool_for_an_unusable_url(
    weather_env: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_WEATHER_BASE_URL", "http//missing-colon")
    with ToolSystem.load(load_entry_points=False, plugins=[hermes_weather], plugins_dir=False) as system:
        assert names(system) == []
        assert "get_weather" in system.hidden()
        outcome = system.call_outcome("get_weather", {"location": "Berlin"})
        assert outcome.status == "error" and outcome.error_kind == "unknown_tool"
        assert "not available" in outcome.result
    assert weather_env.log == []  # neither the check nor the refused call touched the network


def test_success(system: ToolSystem, weather_env: HTTPServer) -> None:
    weather_env.expect_request("/v1/search").respond_with_json({"results": [BERLIN]})
    weather_env.expect_request("/v1/forecast").respond_with_json(forecast_body(days=3))
    outcome = system.call_outcome("get_weather", '{"location": "Berlin", "days": 3}')
    assert outcome.status == "ok", outcome.result
    data = json.loads(outcome.result)
    assert data["location"]["name"] == "Berlin" and data["temperature"] == 21.5
    assert len(data["forecast"]) == 3


def test_invalid_arguments_never_reach_the_network(system: ToolSystem, weather_env: HTTPServer) -> None:
    outcome = system.call_outcome("get_weather", {"location": "Berlin", "days": 30})
    assert outcome.status == "error" and outcome.error_kind == "invalid_arguments"
    assert weather_env.log == []


def test_unknown_city(system: ToolSystem, weather_env: HTTPServer) -> None:
    weather_env.expect_request("/v1/search").respond_with_json({"generationtime_ms": 0.3})
    outcome = system.call_outcome("get_weather", {"location": "Xyzzyville"})
    assert (outcome.status, outcome.error_kind) == ("error", "tool_error")
    assert "no place named 'Xyzzyville' was found" in json.loads(outcome.result)["error"]


def test_service_down(system: ToolSystem, weather_env: HTTPServer) -> None:
    weather_env.expect_request("/v1/search").respond_with_json({"results": [BERLIN]})
    weather_env.expect_request("/v1/forecast").respond_with_data("Internal Server Error", status=500)
    result = system.call("get_weather", {"location": "Berlin"})
    assert json.loads(result)["error"] == "the forecast service is unavailable (HTTP 500); try again later"


def test_timeout(system: ToolSystem, weather_env: HTTPServer) -> None:
    release = threading.Event()

    def slow(request: Request) -> Response:
        release.wait(5)
        return Response("{}", content_type="application/json")

    weather_env.expect_request("/v1/search").respond_with_handler(slow)
    try:
        outcome = system.call_outcome("get_weather", {"location": "Berlin"})
    finally:
        release.set()
    assert outcome.status == "error" and outcome.duration_ms < 2000
    assert "geocoding service did not answer within 0.3 s" in outcome.result


def test_malformed_json(system: ToolSystem, weather_env: HTTPServer) -> None:
    weather_env.expect_request("/v1/search").respond_with_json({"results": [BERLIN]})
    weather_env.expect_request("/v1/forecast").respond_with_data(
        "{'current': oops", content_type="application/json"
    )
    result = json.loads(system.call("get_weather", {"location": "Berlin"}))
    assert result["error"] == "the forecast service sent a malformed response (not JSON); try again later"


def test_entry_point_is_declared() -> None:
    eps = {ep.name: ep.value for ep in entry_points(group="hermes.tools")}
    assert eps.get("weather") == "hermes_weather"


def test_zero_config_load_through_the_entry_point(
    weather_env: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_LOAD_PLUGINS", "weather")
    with ToolSystem.load(plugins_dir=False) as system:
        assert names(system) == ["get_weather"]
        record = next(r for r in system.plugin_records() if r.tools == ["get_weather"])
        assert record.distribution == "hermes-weather" and record.version == hermes_weather.__version__


def test_the_real_hermes_command(weather_env: HTTPServer, tmp_path: Path) -> None:
    """``pip install hermes-weather`` and ``hermes call get_weather`` works, with no configuration at all."""
    hermes = shutil.which("hermes", path=str(Path(sys.executable).parent))
    assert hermes is not None, "the hermes console script is not installed next to this Python"
    weather_env.expect_oneshot_request("/v1/search").respond_with_json({"results": [BERLIN]})
    weather_env.expect_oneshot_request("/v1/forecast").respond_with_json(forecast_body(temperature=-3.5))
    env = {
        **os.environ,
        "HERMES_LOAD_PLUGINS": "weather",
    }  # HERMES_HOME and the base URL come from weather_env
    done = subprocess.run(
        [hermes, "call", "get_weather", '{"location": "Berlin"}'],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["temperature"] == -3.5
    weather_env.expect_oneshot_request("/v1/search").respond_with_json({})
    done = subprocess.run(
        [hermes, "call", "get_weather", "location=Nowhere"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "no place named 'Nowhere' was found" in done.stdout + done.stderr
