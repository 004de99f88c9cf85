"""The pieces of hermes-weather, tested directly against a real local HTTP server."""

from __future__ import annotations

import json
import threading
import time

import pytest
from hermes_weather import get_weather, weather_available
from hermes_weather.settings import DEFAULT_BASE_URL, DEFAULT_GEOCODING_URL, SettingsError, WeatherSettings
from hermes_weather.tool import describe_code
from pytest_httpserver import HTTPServer
from weather_support import BERLIN, BERLIN_NH, forecast_body
from werkzeug import Request, Response

from hermes_core import ToolError


def test_defaults_point_at_open_meteo() -> None:
    s = WeatherSettings.from_env({})
    assert (s.base_url, s.geocoding_url, s.timeout) == (DEFAULT_BASE_URL, DEFAULT_GEOCODING_URL, 10.0)


def test_base_url_also_serves_geocoding_unless_overridden() -> None:
    s = WeatherSettings.from_env({"HERMES_WEATHER_BASE_URL": "http://127.0.0.1:9/"})
    assert s.base_url == s.geocoding_url == "http://127.0.0.1:9"
    s = WeatherSettings.from_env(
        {"HERMES_WEATHER_BASE_URL": "http://a.test", "HERMES_WEATHER_GEOCODING_URL": "https://g.test/x"}
    )
    assert (s.base_url, s.geocoding_url) == ("http://a.test", "https://g.test/x")


@pytest.mark.parametrize(
    "env",
    [
        {"HERMES_WEATHER_BASE_URL": "not a url"},
        {"HERMES_WEATHER_BASE_URL": "ftp://example.com"},
        {"HERMES_WEATHER_BASE_URL": "http://"},
        {"HERMES_WEATHER_BASE_URL": "http://host:notaport"},
        {"HERMES_WEATHER_BASE_URL": "http://host/?q=1"},
        {"HERMES_WEATHER_GEOCODING_URL": "file:///etc/passwd"},
        {"HERMES_WEATHER_TIMEOUT": "soon"},
        {"HERMES_WEATHER_TIMEOUT": "-1"},
        {"HERMES_WEATHER_TIMEOUT": "nan"},
    ],
)
def test_unusable_settings_are_refused(env: dict[str, str]) -> None:
    with pytest.raises(SettingsError):
        WeatherSettings.from_env(env)


def test_check_fn_follows_the_environment_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    # Nothing listens on port 9 here: the check judges the URL's shape only, so it says True anyway
    # (test_weather_system checks that a check and a refused call make no request at all).
    monkeypatch.setenv("HERMES_WEATHER_BASE_URL", "http://127.0.0.1:9")
    assert weather_available() is True
    monkeypatch.setenv("HERMES_WEATHER_BASE_URL", "htp:/broken")
    assert weather_available() is False


def test_describe_code() -> None:
    assert describe_code(0) == "clear sky"
    assert describe_code(95.0) == "thunderstorm"
    assert describe_code(42) == "weather code 42"
    assert describe_code(None) == "unknown"
    assert describe_code(True) == "unknown"


def test_success_with_forecast(weather_env: HTTPServer) -> None:
    weather_env.expect_request(
        "/v1/search", query_string={"name": "Berlin", "count": "10", "language": "en", "format": "json"}
    ).respond_with_json({"results": [BERLIN, BERLIN_NH]})
    weather_env.expect_request("/v1/forecast").respond_with_json(forecast_body(days=2))
    data = json.loads(get_weather("Berlin", days=2))
    assert data["location"]["country"] == "Germany"
    assert data["temperature"] == 21.5 and data["temperature_unit"] == "°C"
    assert data["conditions"] == "partly cloudy"
    assert [d["conditions"] for d in data["forecast"]] == ["light rain", "light rain"]
    forecast_args = weather_env.log[-1][0].args
    assert forecast_args["latitude"] == str(BERLIN["latitude"])
    assert forecast_args["forecast_days"] == "2" and forecast_args["temperature_unit"] == "celsius"


def test_country_qualifier_picks_the_right_place(weather_env: HTTPServer) -> None:
    weather_env.expect_request("/v1/search").respond_with_json({"results": [BERLIN, BERLIN_NH]})
    weather_env.expect_request("/v1/forecast").respond_with_json(forecast_body(temperature=60.1))
    data = json.loads(get_weather("Berlin, New Hampshire", units="fahrenheit"))
    assert data["location"]["region"] == "New Hampshire"
    assert data["temperature_unit"] == "°F"
    assert weather_env.log[-1][0].args["latitude"] == str(BERLIN_NH["latitude"])
    assert weather_env.log[-1][0].args["temperature_unit"] == "fahrenheit"


def test_unknown_city(weather_env: HTTPServer) -> None:
    # Open-Meteo answers an unknown name with an object that has no "results".
    weather_env.expect_request("/v1/search").respond_with_json({"generationtime_ms": 0.5})
    with pytest.raises(ToolError, match="no place named 'Atlantis' was found"):
        get_weather("Atlantis")


def test_unknown_qualifier(weather_env: HTTPServer) -> None:
    weather_env.expect_request("/v1/search").respond_with_json({"results": [BERLIN]})
    with pytest.raises(ToolError, match="no place named 'Berlin' was found in 'Peru'"):
        get_weather("Berlin, Peru")


@pytest.mark.parametrize("status", [500, 502, 503])
def test_service_down(weather_env: HTTPServer, status: int) -> None:
    weather_env.expect_request("/v1/search").respond_with_data("oops", status=status)
    with pytest.raises(ToolError, match=rf"geocoding service is unavailable \(HTTP {status}\)"):
        get_weather("Berlin")


def test_forecast_down_after_geocoding(weather_env: HTTPServer) -> None:
    weather_env.expect_request("/v1/search").respond_with_json({"results": [BERLIN]})
    weather_env.expect_request("/v1/forecast").respond_with_data("", status=503)
    with pytest.raises(ToolError, match=r"forecast service is unavailable \(HTTP 503\)"):
        get_weather("Berlin")


def test_bad_request_reason_is_passed_on(weather_env: HTTPServer) -> None:
    weather_env.expect_request("/v1/search").respond_with_json({"results": [BERLIN]})
    weather_env.expect_request("/v1/forecast").respond_with_json(
        {"error": True, "reason": "Latitude must be in range of -90 to 90°."}, status=400
    )
    with pytest.raises(ToolError, match=r"refused the request \(HTTP 400: Latitude must be") as info:
        get_weather("Berlin")
    assert info.value.retryable is False


def test_timeout(weather_env: HTTPServer) -> None:
    release = threading.Event()

    def slow(request: Request) -> Response:
        release.wait(5)  # far longer than the plugin's 0.3 s timeout, until the test lets go
        return Response("{}", content_type="application/json")

    weather_env.expect_request("/v1/search").respond_with_handler(slow)
    started = time.perf_counter()
    try:
        with pytest.raises(ToolError, match=r"geocoding service did not answer within 0.3 s"):
            get_weather("Berlin")
        assert time.perf_counter() - started < 2.0
    finally:
        release.set()


def test_connection_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there now
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("HERMES_WEATHER_BASE_URL", f"http://127.0.0.1:{port}")
    with pytest.raises(ToolError, match=r"could not reach the geocoding service \(ConnectError\)"):
        get_weather("Berlin")


@pytest.mark.parametrize(
    ("search", "forecast", "message"),
    [
        ("<html>not json</html>", None, r"geocoding service sent a malformed response \(not JSON\)"),
        ("[1, 2]", None, r"geocoding service sent a malformed response \(expected a JSON object"),
        ('{"results": "Berlin"}', None, r"'results' is not a list"),
        ('{"results": [{"name": "Berlin"}]}', None, r"a result has no coordinates"),
        (None, '{"current": ', r"forecast service sent a malformed response \(not JSON\)"),
        (None, '{"latitude": 1}', r"no 'current' block"),
        (None, '{"current": {"temperature_2m": "warm"}}', r"'temperature_2m' is not a number"),
        (None, '{"current": {"time": "x"}}', r"no current temperature"),
    ],
)
def test_malformed_json(
    weather_env: HTTPServer, search: str | None, forecast: str | None, message: str
) -> None:
    if search is None:
        weather_env.expect_request("/v1/search").respond_with_json({"results": [BERLIN]})
    else:
        weather_env.expect_request("/v1/search").respond_with_data(search, content_type="application/json")
    if forecast is not None:
        weather_env.expect_request("/v1/forecast").respond_with_data(
            forecast, content_type="application/json"
        )
    with pytest.raises(ToolError, match=message):
        get_weather("Berlin")


def test_misconfigured_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_WEATHER_BASE_URL", "gopher://x")
    with pytest.raises(ToolError, match="misconfigured"):
        get_weather("Berlin")
