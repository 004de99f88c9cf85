"""``get_weather`` through the real pipeline: results, and every error the model can see."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable

import hermes_weather
import pytest
from pytest_httpserver import HTTPServer
from weather_support import BERLIN, BERLIN_NH, forecast_body
from werkzeug import Request, Response

from hermes_core import CallOutcome, ToolSystem

Call = Callable[..., CallOutcome]


def error_of(outcome: CallOutcome) -> str:
    assert outcome.status == "error", outcome
    return str(json.loads(outcome.result)["error"])


def test_registered_and_visible(weather: ToolSystem) -> None:
    [definition] = weather.definitions()
    assert definition["function"]["name"] == "get_weather"
    assert definition["function"]["parameters"]["required"] == ["location"]
    entry = weather.registry["get_weather"]
    assert entry.toolset == "weather" and entry.parallel_safe and entry.requires_env == ()


def test_success_with_forecast(weather: ToolSystem, service: HTTPServer, call_tool: Call) -> None:
    service.expect_request(
        "/v1/search", query_string={"name": "Berlin", "count": "10", "language": "en", "format": "json"}
    ).respond_with_json({"results": [BERLIN, BERLIN_NH]})
    service.expect_request("/v1/forecast").respond_with_json(forecast_body(days=2))
    outcome = call_tool(weather, "get_weather", '{"location": "Berlin", "days": 2}')
    assert outcome.status == "ok", outcome.result
    data = json.loads(outcome.result)
    assert data["location"]["country"] == "Germany" and data["conditions"] == "partly cloudy"
    assert data["temperature"] == 21.5 and data["temperature_unit"] == "°C"
    assert [d["conditions"] for d in data["forecast"]] == ["light rain", "light rain"]
    forecast_args = service.log[-1][0].args
    assert forecast_args["latitude"] == str(BERLIN["latitude"])
    assert forecast_args["forecast_days"] == "2" and forecast_args["temperature_unit"] == "celsius"


def test_country_qualifier_picks_the_right_place(
    weather: ToolSystem, service: HTTPServer, call_tool: Call
) -> None:
    service.expect_request("/v1/search").respond_with_json({"results": [BERLIN, BERLIN_NH]})
    service.expect_request("/v1/forecast").respond_with_json(forecast_body(temperature=60.1))
    outcome = call_tool(weather, "get_weather", {"location": "Berlin, New Hampshire", "units": "fahrenheit"})
    data = json.loads(outcome.result)
    assert data["location"]["region"] == "New Hampshire" and data["temperature_unit"] == "°F"
    assert service.log[-1][0].args["latitude"] == str(BERLIN_NH["latitude"])


def test_invalid_arguments_never_reach_the_network(
    weather: ToolSystem, service: HTTPServer, call_tool: Call
) -> None:
    outcome = call_tool(weather, "get_weather", {"location": "Berlin", "days": 30})
    assert outcome.error_kind == "invalid_arguments" and service.log == []


@pytest.mark.parametrize(
    ("search", "message"),
    [
        ({"generationtime_ms": 0.5}, "no place named 'Atlantis' was found; check the spelling"),
        ({"results": [BERLIN]}, "no place named 'Atlantis' was found in 'Peru'"),
    ],
)
def test_unknown_places(
    weather: ToolSystem, service: HTTPServer, call_tool: Call, search: dict, message: str
) -> None:
    service.expect_request("/v1/search").respond_with_json(search)
    location = "Atlantis, Peru" if "Peru" in message else "Atlantis"
    outcome = call_tool(weather, "get_weather", {"location": location})
    assert outcome.error_kind == "tool_error" and message in error_of(outcome)


@pytest.mark.parametrize("status", [500, 503])
def test_service_down(weather: ToolSystem, service: HTTPServer, call_tool: Call, status: int) -> None:
    service.expect_request("/v1/search").respond_with_data("oops", status=status)
    outcome = call_tool(weather, "get_weather", {"location": "Berlin"})
    assert error_of(outcome) == f"the geocoding service is unavailable (HTTP {status}); try again later"


def test_forecast_down_and_refused_requests(
    weather: ToolSystem, service: HTTPServer, call_tool: Call
) -> None:
    service.expect_request("/v1/search").respond_with_json({"results": [BERLIN]})
    service.expect_oneshot_request("/v1/forecast").respond_with_data("", status=503)
    assert "forecast service is unavailable (HTTP 503)" in error_of(
        call_tool(weather, "get_weather", {"location": "Berlin"})
    )
    service.expect_oneshot_request("/v1/forecast").respond_with_json(
        {"error": True, "reason": "Latitude must be in range of -90 to 90°."}, status=400
    )
    assert "refused the request (HTTP 400: Latitude must be" in error_of(
        call_tool(weather, "get_weather", {"location": "Berlin"})
    )


def test_timeout(weather: ToolSystem, service: HTTPServer, call_tool: Call) -> None:
    release = threading.Event()

    def slow(request: Request) -> Response:
        release.wait(5)  # far longer than the configured 0.3 s, until the test lets go
        return Response("{}", content_type="application/json")

    service.expect_request("/v1/search").respond_with_handler(slow)
    try:
        outcome = call_tool(weather, "get_weather", {"location": "Berlin"})
    finally:
        release.set()
    assert "geocoding service did not answer within 0.3 s" in error_of(outcome)
    assert outcome.duration_ms < 2000


def test_connection_refused(make_tool_system: Callable[..., ToolSystem], call_tool: Call) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there now
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    system = make_tool_system(
        hermes_weather, config={"plugins": {"weather": {"base_url": f"http://127.0.0.1:{port}"}}}
    )
    outcome = call_tool(system, "get_weather", {"location": "Berlin"})
    assert "could not reach the geocoding service (ConnectError)" in error_of(outcome)


@pytest.mark.parametrize(
    ("search", "forecast", "message"),
    [
        ("<html>not json</html>", None, "geocoding service sent a malformed response (not JSON)"),
        ("[1, 2]", None, "geocoding service sent a malformed response (expected a JSON object"),
        ('{"results": "Berlin"}', None, "'results' is not a list"),
        ('{"results": [{"name": "Berlin"}]}', None, "a result has no coordinates"),
        (None, '{"current": ', "forecast service sent a malformed response (not JSON)"),
        (None, '{"latitude": 1}', "no 'current' block"),
        (None, '{"current": {"temperature_2m": "warm"}}', "'temperature_2m' is not a number"),
        (None, '{"current": {"time": "x"}}', "no current temperature"),
    ],
)
def test_malformed_answers(
    weather: ToolSystem,
    service: HTTPServer,
    call_tool: Call,
    search: str | None,
    forecast: str | None,
    message: str,
) -> None:
    if search is None:
        service.expect_request("/v1/search").respond_with_json({"results": [BERLIN]})
    else:
        service.expect_request("/v1/search").respond_with_data(search, content_type="application/json")
    if forecast is not None:
        service.expect_request("/v1/forecast").respond_with_data(forecast, content_type="application/json")
    assert message in error_of(call_tool(weather, "get_weather", {"location": "Berlin"}))


def test_one_http_client_per_system_closed_with_it(
    make_tool_system: Callable[..., ToolSystem], section: dict, service: HTTPServer, call_tool: Call
) -> None:
    service.expect_request("/v1/search").respond_with_json({"results": [BERLIN]})
    service.expect_request("/v1/forecast").respond_with_json(forecast_body())
    system = make_tool_system(hermes_weather, config={"plugins": {"weather": section}})
    for _ in range(2):
        assert call_tool(system, "get_weather", {"location": "Berlin"}).status == "ok"
    client = system.stash("weather.client:0.3", lambda: None)
    assert client is not None and not client.is_closed
    system.close()
    assert client.is_closed


def test_describe_code() -> None:
    assert hermes_weather.describe_code(0) == "clear sky"
    assert hermes_weather.describe_code(95.0) == "thunderstorm"
    assert hermes_weather.describe_code(42) == "weather code 42"
    assert hermes_weather.describe_code(None) == hermes_weather.describe_code(True) == "unknown"
