"""Where the weather service lives and how long to wait for it, read from the environment.

``HERMES_WEATHER_BASE_URL``       root of the forecast API (default ``https://api.open-meteo.com``)
``HERMES_WEATHER_GEOCODING_URL``  root of the geocoding API (default: the base URL when that is set,
                                  otherwise ``https://geocoding-api.open-meteo.com``)
``HERMES_WEATHER_TIMEOUT``        seconds per request (default 10)
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_GEOCODING_URL", "DEFAULT_TIMEOUT", "SettingsError", "WeatherSettings"]

DEFAULT_BASE_URL = "https://api.open-meteo.com"
DEFAULT_GEOCODING_URL = "https://geocoding-api.open-meteo.com"
DEFAULT_TIMEOUT = 10.0


class SettingsError(ValueError):
    """The environment configures the weather service in a way that cannot work."""


def _check_url(name: str, value: str) -> str:
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
    def from_env(cls, environ: Mapping[str, str] | None = None) -> WeatherSettings:
        """Read and validate the settings; raises ``SettingsError`` when they are unusable."""
        env = os.environ if environ is None else environ
        base = env.get("HERMES_WEATHER_BASE_URL", "").strip()
        geo = env.get("HERMES_WEATHER_GEOCODING_URL", "").strip()
        raw_timeout = env.get("HERMES_WEATHER_TIMEOUT", "").strip()
        base_url = _check_url("HERMES_WEATHER_BASE_URL", base) if base else DEFAULT_BASE_URL
        if geo:
            geocoding_url = _check_url("HERMES_WEATHER_GEOCODING_URL", geo)
        else:
            geocoding_url = base_url if base else DEFAULT_GEOCODING_URL
        timeout = DEFAULT_TIMEOUT
        if raw_timeout:
            try:
                timeout = float(raw_timeout)
            except ValueError:
                raise SettingsError(f"HERMES_WEATHER_TIMEOUT={raw_timeout!r} is not a number") from None
            if not math.isfinite(timeout) or timeout <= 0:
                raise SettingsError(f"HERMES_WEATHER_TIMEOUT={raw_timeout!r} must be a positive number")
        return cls(base_url=base_url, geocoding_url=geocoding_url, timeout=timeout)
