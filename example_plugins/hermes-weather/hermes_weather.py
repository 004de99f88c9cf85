"""hermes-weather: a ``get_weather`` tool for hermes-tools over the Open-Meteo API, in one file.

Found through the entry point ``weather = "hermes_weather"`` (group ``hermes.tools``): ``register_tools``
registers ``get_weather`` in the toolset ``weather``. Importing this module is cheap; httpx loads on the
first call. Settings come from the ``[plugins.weather]`` section of the hermes config::

    [plugins.weather]
    base_url = "https://api.open-meteo.com"                 # root of /v1/forecast
    geocoding_url = "https://geocoding-api.open-meteo.com"  # root of /v1/search (default: base_url when set)
    timeout = 10                                            # seconds per request

with the environment variables ``HERMES_WEATHER_BASE_URL``, ``HERMES_WEATHER_GEOCODING_URL`` and
``HERMES_WEATHER_TIMEOUT`` as a fallback for keys the section leaves out.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from hermes_core import CallContext, ToolError, ToolRegistry, Unavailable, hookimpl, tool_result

if TYPE_CHECKING:
    import httpx

__version__ = "0.1.0"

DEFAULT_BASE_URL = "https://api.open-meteo.com"
DEFAULT_GEOCODING_URL = "https://geocoding-api.open-meteo.com"
DEFAULT_TIMEOUT = 10.0
_ENV = {"base_url": "HERMES_WEATHER_BASE_URL", "geocoding_url": "HERMES_WEATHER_GEOCODING_URL"}
_ENV_TIMEOUT = "HERMES_WEATHER_TIMEOUT"
_USER_AGENT = "hermes-weather/0.1 (+https://pypi.org/project/hermes-weather/)"

SCHEMA: dict[str, Any] = {
    "name": "get_weather",
    "description": (
        "Current weather for a place, with an optional daily forecast. "
        "Give a city name, optionally followed by a comma and its country or region (e.g. 'Paris, France')."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "location": {"type": "string", "minLength": 1, "maxLength": 200, "description": "City name"},
            "units": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Default celsius"},
            "days": {
                "type": "integer",
                "minimum": 0,
                "maximum": 7,
                "description": "Days of daily forecast to add (0-7, default 0)",
            },
        },
        "required": ["location"],
        "additionalProperties": False,
    },
}

# -- settings ---------------------------------------------------------------------------------------------


class SettingsError(ValueError):
    """The weather service is configured in a way that cannot work."""


def _check_url(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise SettingsError(f"{name} must be a string, got {type(value).__name__}")
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError as exc:
        raise SettingsError(f"{name}={value!r} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingsError(f"{name}={value!r} must be an http:// or https:// URL with a host")
    if parts.query or parts.fragment:
        raise SettingsError(f"{name}={value!r} must not have a query or fragment")
    return value.rstrip("/")


@dataclass(frozen=True, slots=True)
class WeatherSettings:
    """The validated service settings."""

    base_url: str = DEFAULT_BASE_URL
    geocoding_url: str = DEFAULT_GEOCODING_URL
    timeout: float = DEFAULT_TIMEOUT

    @classmethod
    def load(cls, section: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> WeatherSettings:
        """From ``[plugins.weather]``, the environment filling in what it leaves out; ``SettingsError`` when
        unusable."""
        env = os.environ if environ is None else environ
        unknown = set(section) - {"base_url", "geocoding_url", "timeout"}
        if unknown:
            raise SettingsError(f"[plugins.weather] has unknown keys: {', '.join(sorted(unknown))}")

        def setting(key: str, var: str) -> tuple[str, Any]:
            if key in section:
                return f"[plugins.weather] {key}", section[key]
            return var, env.get(var, "").strip() or None

        where, base = setting("base_url", _ENV["base_url"])
        base_url = _check_url(where, base) if base else DEFAULT_BASE_URL
        where, geo = setting("geocoding_url", _ENV["geocoding_url"])
        geocoding_url = _check_url(where, geo) if geo else (base_url if base else DEFAULT_GEOCODING_URL)
        where, raw = setting("timeout", _ENV_TIMEOUT)
        timeout = DEFAULT_TIMEOUT
        if raw is not None:
            try:
                timeout = float(raw)
            except (TypeError, ValueError):
                raise SettingsError(f"{where}={raw!r} is not a number") from None
            if not math.isfinite(timeout) or timeout <= 0:
                raise SettingsError(f"{where}={raw!r} must be a positive number")
        return cls(base_url=base_url, geocoding_url=geocoding_url, timeout=timeout)


def weather_available(system: Any) -> bool | Unavailable:
    """Show the tool only when the settings are usable; never touches the network (it runs every turn)."""
    try:
        WeatherSettings.load(system.plugin_config("weather"))
    except SettingsError as exc:
        return Unavailable(str(exc))
    return True


# -- HTTP -------------------------------------------------------------------------------------------------


def malformed(service: str, detail: str) -> ToolError:
    """The error for a response that is not shaped as the service documents."""
    return ToolError(f"the {service} service sent a malformed response ({detail}); try again later")


def _reason(response: httpx.Response) -> str:
    """Open-Meteo explains a 400 as ``{"error": true, "reason": "..."}``; keep it short."""
    try:
        data = response.json()
    except ValueError:
        return ""
    reason = data.get("reason") if isinstance(data, dict) else None
    return str(reason)[:200] if reason else ""


def fetch_json(client: httpx.Client, url: str, params: dict[str, Any], service: str) -> dict[str, Any]:
    """GET ``url`` and return its JSON object, or raise a ``ToolError`` saying what went wrong."""
    import httpx

    try:
        response = client.get(url, params=params)
    except httpx.TimeoutException:
        timeout = client.timeout.read
        waited = f" within {timeout:g} s" if timeout is not None else ""
        raise ToolError(f"the {service} service did not answer{waited}; try again later") from None
    except httpx.HTTPError as exc:
        raise ToolError(
            f"could not reach the {service} service ({type(exc).__name__}); try again later"
        ) from None
    status = response.status_code
    if status >= 500:
        raise ToolError(f"the {service} service is unavailable (HTTP {status}); try again later")
    if status == 429:
        raise ToolError(f"the {service} service is rate limiting requests (HTTP 429); try again in a minute")
    if status >= 400:
        reason = _reason(response)
        raise ToolError(
            f"the {service} service refused the request (HTTP {status}{': ' + reason if reason else ''})",
            retryable=False,
        )
    if status != 200:
        raise malformed(service, f"unexpected HTTP {status}")
    try:
        data = response.json()
    except ValueError:
        raise malformed(service, "not JSON") from None
    if not isinstance(data, dict):
        raise malformed(service, f"expected a JSON object, got {type(data).__name__}")
    return data


# -- the tool ---------------------------------------------------------------------------------------------

# WMO weather interpretation codes, as used by Open-Meteo's ``weather_code``.
_CODES: dict[int, str] = {
    0: "clear sky", 1: "mainly clear", 2: "partly cloudy", 3: "overcast", 45: "fog", 48: "depositing rime fog",
    51: "light drizzle", 53: "drizzle", 55: "dense drizzle", 56: "light freezing drizzle",
    57: "freezing drizzle", 61: "light rain", 63: "rain", 65: "heavy rain", 66: "light freezing rain",
    67: "freezing rain", 71: "light snow", 73: "snow", 75: "heavy snow", 77: "snow grains",
    80: "light rain showers", 81: "rain showers", 82: "violent rain showers", 85: "light snow showers",
    86: "snow showers", 95: "thunderstorm", 96: "thunderstorm with light hail", 99: "thunderstorm with hail",
}  # fmt: skip
_CURRENT = (
    "temperature_2m,apparent_temperature,relative_humidity_2m,precipitation,weather_code,wind_speed_10m"
)
_DAILY = "weather_code,temperature_2m_max,temperature_2m_min,precipitation_sum"


def describe_code(code: object) -> str:
    """A WMO weather code in words."""
    if isinstance(code, bool) or not isinstance(code, int | float):
        return "unknown"
    return _CODES.get(int(code), f"weather code {int(code)}")


def _place(client: httpx.Client, settings: WeatherSettings, location: str) -> dict[str, Any]:
    name, _, qualifier = (part.strip() for part in location.partition(","))
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
    if not isinstance(place.get("latitude"), int | float) or not isinstance(
        place.get("longitude"), int | float
    ):
        raise malformed("geocoding", "a result has no coordinates")
    return place


def _number(block: dict[str, Any], key: str) -> float | None:
    value = block.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise malformed("forecast", f"{key!r} is not a number")
    return float(value)


def _daily(data: dict[str, Any]) -> list[dict[str, Any]]:
    daily = data.get("daily")
    if not isinstance(daily, dict) or not isinstance(daily.get("time"), list):
        raise malformed("forecast", "no 'daily' block")

    def column(key: str, i: int) -> Any:
        values = daily.get(key)
        return values[i] if isinstance(values, list) and i < len(values) else None

    return [
        {
            "date": date,
            "conditions": describe_code(column("weather_code", i)),
            "max": column("temperature_2m_max", i),
            "min": column("temperature_2m_min", i),
            "precipitation_mm": column("precipitation_sum", i),
        }
        for i, date in enumerate(daily["time"])
    ]


def get_weather(
    location: str,
    units: Literal["celsius", "fahrenheit"] = "celsius",
    days: int = 0,
    *,
    context: CallContext,
) -> str:
    """Look up ``location`` and return its current weather (and ``days`` of forecast) as JSON."""
    import httpx

    try:
        settings = WeatherSettings.load(context.plugin_config("weather"))
    except SettingsError as exc:
        raise ToolError(f"the weather tool is misconfigured: {exc}", retryable=False) from None
    client = context.stash(  # one client per system and timeout, closed with the system
        f"weather.client:{settings.timeout}",
        lambda: httpx.Client(
            timeout=settings.timeout, headers={"User-Agent": _USER_AGENT}, follow_redirects=False
        ),
    )
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
        "temperature_unit": "°F" if units == "fahrenheit" else "°C",
    }
    if days:
        report["forecast"] = _daily(data)
    return tool_result(report)


@hookimpl
def register_tools(registry: ToolRegistry) -> None:
    """Register ``get_weather`` in the ``weather`` toolset."""
    registry.register(
        name="get_weather",
        toolset="weather",
        schema=SCHEMA,
        handler=get_weather,
        check_fn=weather_available,
        emoji="🌦",
        max_result_size_chars=8_000,
        parallel_safe=True,
    )
