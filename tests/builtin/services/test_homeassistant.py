"""The Home Assistant tools against a local server speaking its REST API (``/api/states``, ``/api/services``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from hermes_core import ToolSystem
from hermes_core.security import CallbackApprover

Configure = Callable[..., ToolSystem]
TOKEN = "hass-llat-token-for-tests-2718281828"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

STATES = [
    {
        "entity_id": "light.kitchen",
        "state": "on",
        "attributes": {"friendly_name": "Kitchen Light", "brightness": 180},
        "last_changed": "2026-01-01T10:00:00+00:00",
        "last_updated": "2026-01-01T10:00:00+00:00",
        "context": {"id": "x"},
    },
    {
        "entity_id": "sensor.outside_temperature",
        "state": "4.5",
        "attributes": {"friendly_name": "Outside", "unit_of_measurement": "°C"},
    },
    {"entity_id": "lock.front_door", "state": "locked", "attributes": {"friendly_name": "Front Door"}},
]
SERVICES = [
    {
        "domain": "light",
        "services": {
            "turn_on": {"name": "Turn on", "fields": {"brightness_pct": {}, "color_name": {}}},
            "turn_off": {"fields": {}},
        },
    },
    {"domain": "lock", "services": {"unlock": {"fields": {"code": {}}}, "lock": {"fields": {"code": {}}}}},
]


def _system(
    configure: Configure, base: str, secret: Callable[[str], Any], approver: Any = None
) -> ToolSystem:
    return configure(homeassistant={"url": base, "token": secret(TOKEN)}, approver=approver)


def test_list_get_and_services(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/api/states", headers=AUTH).respond_with_json(STATES)
    httpserver.expect_request("/api/states/light.kitchen", headers=AUTH).respond_with_json(STATES[0])
    httpserver.expect_request("/api/services", headers=AUTH).respond_with_json(SERVICES)
    system = _system(configure, base, secret)
    listed = system.call("ha_list_entities", {})
    assert listed.splitlines() == [
        "3 entities:",
        "light.kitchen  on  (Kitchen Light)",
        "lock.front_door  locked  (Front Door)",
        "sensor.outside_temperature  4.5 °C  (Outside)",
    ]
    assert system.call("ha_list_entities", {"domain": "sensor"}).splitlines()[1].startswith("sensor.outside")
    assert "front_door" in system.call("ha_list_entities", {"search": "front"})
    assert system.call("ha_list_entities", {"search": "garage"}) == "No entity matches."
    state = json.loads(system.call("ha_get_state", {"entity_id": "light.kitchen"}))
    assert state["state"] == "on" and state["attributes"]["brightness"] == 180 and "context" not in state
    assert (
        system.call("ha_list_services", {"domain": "light"})
        == "light: turn_off, turn_on(brightness_pct, color_name)"
    )
    assert system.call("ha_list_services", {}).count("\n") == 1


def test_call_service_sends_the_documented_body(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_request(
        "/api/services/light/turn_on",
        method="POST",
        headers=AUTH,
        json={"entity_id": "light.kitchen", "brightness_pct": 40},
    ).respond_with_json([{"entity_id": "light.kitchen", "state": "on", "attributes": {}}])
    system = _system(configure, base, secret)
    out = system.call(
        "ha_call_service",
        {
            "domain": "light",
            "service": "turn_on",
            "entity_id": "light.kitchen",
            "data": {"brightness_pct": 40},
        },
    )
    assert out == "Called light.turn_on. Changed: light.kitchen -> on."


@pytest.mark.parametrize(
    "args",
    [
        {"domain": "lock", "service": "unlock", "entity_id": "lock.front_door"},
        {"domain": "cover", "service": "open_cover", "entity_id": "cover.garage"},
        {
            "domain": "alarm_control_panel",
            "service": "alarm_disarm",
            "data": {"entity_id": "alarm_control_panel.home"},
        },
        {"domain": "homeassistant", "service": "toggle", "data": {"entity_id": ["light.a", "cover.garage"]}},
        {"domain": "homeassistant", "service": "turn_off", "data": {"area_id": "garage"}},
    ],
)
def test_locks_alarms_and_covers_need_approval(
    configure: Configure,
    base: str,
    secret: Callable[[str], Any],
    httpserver: HTTPServer,
    args: dict[str, Any],
) -> None:
    path = f"/api/services/{args['domain']}/{args['service']}"
    httpserver.expect_request(path, method="POST").respond_with_json([])
    headless = _system(configure, base, secret).call_outcome("ha_call_service", args)
    assert headless.status == "denied" and "physical access or security" in headless.result
    assert not httpserver.log  # nothing reached Home Assistant
    asked: list[str] = []

    def approve(request: Any) -> str:
        asked.append(request.subject)
        return "once"

    approved = _system(configure, base, secret, approver=CallbackApprover(approve))
    assert approved.call_outcome("ha_call_service", args).ok
    assert (
        len(httpserver.log) == 1
        and asked
        and asked[0].startswith(f"ha_call_service {args['domain']}.{args['service']} ")
    )


def test_ordinary_calls_need_no_approval(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/api/services/light/turn_off", json={"area_id": "garage"}).respond_with_json(
        []
    )
    outcome = _system(configure, base, secret).call_outcome(
        "ha_call_service", {"domain": "light", "service": "turn_off", "data": {"area_id": "garage"}}
    )
    assert outcome.ok and outcome.result == "Called light.turn_off. No state changed."


def test_host_command_services_are_refused_and_ids_checked(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    system = _system(configure, base, secret)
    shell = system.call_outcome("ha_call_service", {"domain": "shell_command", "service": "reboot"})
    assert shell.status == "error" and "run commands or requests on the Home Assistant host" in shell.result
    sneaky = system.call_outcome(
        "ha_call_service",
        {"domain": "light", "service": "turn_on", "data": {"entity_id": "../../api/config"}},
    )
    assert "is not an entity id" in sneaky.result
    traversal = system.call_outcome("ha_get_state", {"entity_id": "../config"})
    assert traversal.status == "error"
    assert not httpserver.log


def test_errors(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    system = _system(configure, base, secret)
    httpserver.expect_oneshot_request("/api/states").respond_with_data("401: Unauthorized", status=401)
    denied = system.call_outcome("ha_list_entities", {})
    assert "Home Assistant rejected the credentials (HTTP 401: 401: Unauthorized)" in denied.result
    assert "HASS_TOKEN" in denied.result
    httpserver.expect_oneshot_request("/api/states/light.nope").respond_with_json(
        {"message": "Entity not found."}, status=404
    )
    missing = system.call_outcome("ha_get_state", {"entity_id": "light.nope"})
    assert "not found" in missing.result and "Entity not found." in missing.result
    httpserver.expect_oneshot_request("/api/states").respond_with_json({"entity_id": "x"})
    assert "malformed reply to listing entities" in system.call("ha_list_entities", {})
    httpserver.expect_oneshot_request("/api/services").respond_with_data(
        "<html>proxy error</html>", content_type="text/html"
    )
    assert "malformed reply to listing services (expected JSON, got text/html" in system.call(
        "ha_list_services", {}
    )
    httpserver.expect_oneshot_request("/api/states").respond_with_json(
        {}, status=429, headers={"Retry-After": "90"}
    )
    assert "retry after 90 s" in system.call("ha_list_entities", {})


def test_environment_variables_and_the_hidden_reason(
    configure: Configure, base: str, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    ok, reason = configure().availability_of("ha_get_state")
    assert not ok and 'token = {env = "HASS_TOKEN"}' in reason and "HASS_URL" in reason
    monkeypatch.setenv("HASS_URL", base)
    monkeypatch.setenv("HASS_TOKEN", TOKEN)
    httpserver.expect_request("/api/states/light.kitchen", headers=AUTH).respond_with_json(STATES[0])
    system = configure()
    assert system.availability_of("ha_get_state") == (True, "")
    assert '"state": "on"' in system.call("ha_get_state", {"entity_id": "light.kitchen"})
