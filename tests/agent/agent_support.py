"""Shared helpers of the agent tests (a module with its own name, so it never collides with another conftest)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scripted_llm import ScriptedLLM

from hermes_core import ToolSystem

MakeSystem = Callable[..., ToolSystem]

# (provider, stream): every loop test runs against each wire format
WIRES = [("openai", True), ("openai", False), ("anthropic", True), ("anthropic", False)]
WIRE_IDS = ["openai-sse", "openai-json", "anthropic-sse", "anthropic-json"]


def model_table(
    llm: ScriptedLLM, provider: str = "openai", stream: bool = True, **extra: Any
) -> dict[str, Any]:
    """A ``[models.NAME]`` table for the scripted server (retries fast, no real key)."""
    url = llm.anthropic_url if provider == "anthropic" else llm.openai_url
    table: dict[str, Any] = {
        "provider": provider,
        "base_url": url,
        "model": f"scripted-{provider}",
        "stream": stream,
        "timeout": 10.0,
        "max_retries": 2,
    }
    table.update(extra)
    return table
