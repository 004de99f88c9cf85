"""The JSON Schema of ``get_weather`` (a plain dict: importing it costs nothing)."""

from __future__ import annotations

from typing import Any

__all__ = ["SCHEMA"]

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
