"""The ``get_weather`` tool: geocode a place name, then read the current conditions and a short forecast."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from hermes_core import ToolError, tool_result

from .client import fetch_json, malformed
from .settings import SettingsError, WeatherSettings

if TYPE_CHECKING:
    import httpx

__all__ = ["describe_code", "get_weather", "weather_available"]

# WMO weather interpretation codes, as used by Open-Meteo's ``weather_code``.
_CODES: dict[int, str] = {
    0: "clear sky",
    1: "mainly clear",
    2: "partly cloudy",
    3: "overcast",
    45: "fog",
    48: "depositing rime fog",
    51: "light drizzle",
    53: "drizzle",
    55: "dense drizzle",
    56: "light freezing drizzle",
    57: "freezing drizzle",
    61: "light rain",
    63: "rain",
    65: "heavy rain",
    66: "light freezing rain",
    67: "freezing rain",
    71: "light snow",
    73: "snow",
    75: "heavy snow",
    77: "snow grains",
    80: "light rain showers",
    81: "rain showers",
    82: "violent rain showers",
    85: "light snow showers",
    86: "snow showers",
    95: "thunderstorm",
    96: "thunderstorm with light hail",
    99: "thunderstorm with hail",
}

_CURRENT = (
    "temperature_2m,apparent_temperature,relative_humidity_2m,precipitation,weather_code,wind_speed_10m"
)
_DAILY = "weather_code,temperature_2m_max,temperature_2m_min,precipitation_sum"


def describe_code(code: object) -> str:
    """A WMO weather code in words."""
    if isinstance(code, bool) or not isinstance(code, int | float):
        return "unknown"
    return _CODES.get(int(code), f"weather code {int(code)}")


def weather_available() -> bool:
    """Show the tool only when the configured service URLs are usable (no network is touched)."""
    try:
        WeatherSettings.from_env()
    except SettingsError:
        return False
    return True


def _split_location(location: str) -> tuple[str, str]:
    name, _, qualifier = location.partition(",")
    return name.strip(), qualifier.strip()


def _place(client: httpx.Client, settings: WeatherSettings, location: str) -> dict[str, Any]:
    name, qualifier = _split_location(location)
    if not name:
        raise ToolError("location must start with a place name, e.g. 'Berlin' or 'Paris, France'")
    data = fetch_json(
        client,
        f"{settings.geocoding_url}/v1/search",
        {"name": name, "count": 10, "language": "en", "format": "json"},
        "geocoding",
    )
    results = data.get("results", [])
    if not isinstance(results, list):
        raise malformed("geocoding", "'results' is not a list")
    candidates = [r for r in results if isinstance(r, dict)]
    if qualifier:
        wanted = qualifier.casefold()
        candidates = [
            r
            for r in candidates
            if any(wanted == str(r.get(k, "")).casefold() for k in ("country", "country_code", "admin1"))
        ]
    if not candidates:
        where = f" in {qualifier!r}" if qualifier else ""
        raise ToolError(
            f"no place named {name!r} was found{where}; check the spelling or try a nearby larger city"
        )
    place = candidates[0]
    lat, lon = place.get("latitude"), place.get("longitude")
    if not isinstance(lat, int | float) or not isinstance(lon, int | float):
        raise malformed("geocoding", "a result has no coordinates")
    return place


def _number(block: dict[str, Any], key: str, service: str = "forecast") -> float | None:
    value = block.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise malformed(service, f"{key!r} is not a number")
    return float(value)


def _daily(data: dict[str, Any]) -> list[dict[str, Any]]:
    daily = data.get("daily")
    if not isinstance(daily, dict) or not isinstance(daily.get("time"), list):
        raise malformed("forecast", "no 'daily' block")
    days = []
    for i, date in enumerate(daily["time"]):

        def pick(key: str, i: int = i) -> Any:
            column = daily.get(key)
            return column[i] if isinstance(column, list) and i < len(column) else None

        days.append(
            {
                "date": date,
                "conditions": describe_code(pick("weather_code")),
                "max": pick("temperature_2m_max"),
                "min": pick("temperature_2m_min"),
                "precipitation_mm": pick("precipitation_sum"),
            }
        )
    return days


def get_weather(location: str, units: Literal["celsius", "fahrenheit"] = "celsius", days: int = 0) -> str:
    """Look up ``location`` and return its current weather (and ``days`` of forecast) as JSON."""
    import httpx

    try:
        settings = WeatherSettings.from_env()
    except SettingsError as exc:
        raise ToolError(f"the weather tool is misconfigured: {exc}", retryable=False) from None
    headers = {"User-Agent": "hermes-weather/0.1 (+https://pypi.org/project/hermes-weather/)"}
    with httpx.Client(timeout=settings.timeout, headers=headers, follow_redirects=False) as client:
        place = _place(client, settings, location)
        params: dict[str, Any] = {
            "latitude": place["latitude"],
            "longitude": place["longitude"],
            "current": _CURRENT,
            "timezone": "auto",
            "wind_speed_unit": "kmh",
            "temperature_unit": units,
        }
        if days:
            params["daily"] = _DAILY
            params["forecast_days"] = days
        data = fetch_json(client, f"{settings.base_url}/v1/forecast", params, "forecast")
    current = data.get("current")
    if not isinstance(current, dict):
        raise malformed("forecast", "no 'current' block")
    temperature = _number(current, "temperature_2m")
    if temperature is None:
        raise malformed("forecast", "no current temperature")
    unit = "°F" if units == "fahrenheit" else "°C"
    report: dict[str, Any] = {
        "location": {
            "name": place.get("name"),
            "region": place.get("admin1"),
            "country": place.get("country"),
            "latitude": place["latitude"],
            "longitude": place["longitude"],
            "timezone": data.get("timezone", place.get("timezone")),
        },
        "time": current.get("time"),
        "conditions": describe_code(current.get("weather_code")),
        "temperature": temperature,
        "feels_like": _number(current, "apparent_temperature"),
        "humidity_percent": _number(current, "relative_humidity_2m"),
        "precipitation_mm": _number(current, "precipitation"),
        "wind_kmh": _number(current, "wind_speed_10m"),
        "temperature_unit": unit,
    }
    if days:
        report["forecast"] = _daily(data)
    return tool_result(report)
