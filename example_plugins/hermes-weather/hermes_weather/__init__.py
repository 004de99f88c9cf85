"""hermes-weather: a ``get_weather`` tool for hermes-tools, found through the ``hermes.tools`` entry point.

Importing this package is cheap: the implementation (and httpx) load on the tool's first check or call.
"""

from __future__ import annotations

from typing import Literal

from hermes_core import ToolRegistry, hookimpl

from .schema import SCHEMA

__version__ = "0.1.0"

__all__ = ["SCHEMA", "get_weather", "register_tools", "weather_available"]


def get_weather(location: str, units: Literal["celsius", "fahrenheit"] = "celsius", days: int = 0) -> str:
    """Current weather (and ``days`` of daily forecast) for ``location``, as JSON; failures raise ``ToolError``."""
    from .tool import get_weather as run

    return run(location, units, days)


def weather_available() -> bool:
    """True when the configured service URLs and timeout are usable; never touches the network."""
    from .tool import weather_available as check

    return check()


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
