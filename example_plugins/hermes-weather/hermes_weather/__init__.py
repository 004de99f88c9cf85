"""hermes-weather: a ``get_weather`` tool for hermes-tools, found through the ``hermes.tools`` entry point.

Importing this package is cheap: httpx is imported on the first call of the tool.
"""

from __future__ import annotations

from hermes_core import ToolRegistry, hookimpl

from .settings import WeatherSettings
from .tool import SCHEMA, get_weather, weather_available

__version__ = "0.1.0"

__all__ = ["SCHEMA", "WeatherSettings", "get_weather", "register_tools", "weather_available"]


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
