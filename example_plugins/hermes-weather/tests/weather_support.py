"""Canned Open-Meteo answers for the hermes-weather tests (a uniquely named module, importable from tests)."""

from __future__ import annotations

from typing import Any

BERLIN = {
    "id": 2950159,
    "name": "Berlin",
    "latitude": 52.52437,
    "longitude": 13.41053,
    "country_code": "DE",
    "country": "Germany",
    "admin1": "Land Berlin",
    "timezone": "Europe/Berlin",
}
BERLIN_NH = {
    "id": 5083330,
    "name": "Berlin",
    "latitude": 44.46867,
    "longitude": -71.18508,
    "country_code": "US",
    "country": "United States",
    "admin1": "New Hampshire",
    "timezone": "America/New_York",
}


def forecast_body(temperature: float = 21.5, code: int = 2, days: int = 0) -> dict[str, Any]:
    body: dict[str, Any] = {
        "latitude": 52.52,
        "longitude": 13.41,
        "timezone": "Europe/Berlin",
        "current": {
            "time": "2025-06-01T12:00",
            "temperature_2m": temperature,
            "apparent_temperature": temperature - 1,
            "relative_humidity_2m": 40,
            "precipitation": 0.0,
            "weather_code": code,
            "wind_speed_10m": 12.3,
        },
    }
    if days:
        body["daily"] = {
            "time": [f"2025-06-0{i + 1}" for i in range(days)],
            "weather_code": [61] * days,
            "temperature_2m_max": [24.0] * days,
            "temperature_2m_min": [11.0] * days,
            "precipitation_sum": [1.5] * days,
        }
    return body
