"""Where the web, browser and vision tools sit in the built-in toolsets, and what their definitions cost."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from hermes_builtin.toolsets import BROWSER_TOOLS, CORE
from hermes_core import ToolSystem
from hermes_core.cli import cli
from hermes_core.schema import render

NEW_TOOLS = [*BROWSER_TOOLS, "web_search", "web_extract", "vision_analyze"]
CONFIGURED = {
    "plugins": {
        "web": {"searxng_url": "http://127.0.0.1:9"},
        "vision": {"base_url": "http://127.0.0.1:9/v1", "model": "m"},
    }
}


def test_toolset_membership(make_builtin_system: Callable[..., ToolSystem]) -> None:
    system = make_builtin_system(config=CONFIGURED)
    assert set(system.toolsets.expand("web")) == {"web_search", "web_extract"}
    assert set(system.toolsets.expand("vision")) == {"vision_analyze", "video_analyze"}
    assert set(system.toolsets.expand("browser")) == {*BROWSER_TOOLS, "web_search"}
    assert {"web_search", "web_extract", "vision_analyze"} <= set(system.toolsets.expand("hermes-cli"))
    assert not set(BROWSER_TOOLS) & set(CORE)  # a browser is opt-in: it starts Chromium
    assert {"web_search", "web_extract", "read_file", "terminal"} <= set(system.toolsets.expand("debugging"))


def test_unconfigured_tools_stay_hidden_in_the_baseline(
    make_builtin_system: Callable[..., ToolSystem],
) -> None:
    system = make_builtin_system()
    available = system.available(enabled=["hermes-cli"])
    assert "web_extract" in available
    assert "web_search" not in available and "vision_analyze" not in available
    hidden = system.hidden(enabled=["hermes-cli"])
    assert "[plugins.web]" in hidden["web_search"] and "[plugins.vision]" in hidden["vision_analyze"]


def test_definitions_stay_lean(make_builtin_system: Callable[..., ToolSystem]) -> None:
    """At most 1,000 characters per new tool on average, as the model is sent them (OpenAI format)."""
    system = make_builtin_system(config=CONFIGURED)
    everything = frozenset(system.registry.names())
    sizes = {
        name: len(json.dumps(render(system.tool_schema(system.registry.get(name), everything), "openai")))
        for name in NEW_TOOLS
    }
    assert sum(sizes.values()) / len(sizes) <= 1000, sizes
    assert max(sizes.values()) <= 1500, sizes


def test_hermes_toolsets_reports_the_sizes() -> None:
    home = Path(os.environ["HERMES_HOME"])
    (home / "config.toml").write_text(
        '[plugins.web]\nsearxng_url = "http://127.0.0.1:9"\n'
        '[plugins.vision]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
    )
    result = CliRunner().invoke(cli, ["toolsets", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.stdout)["toolsets"]}
    for name in ("web", "vision", "browser"):
        row = rows[name]
        shown = len(row["tools"])
        assert shown, f"{name}: {row['hidden']}"
        if name == "browser" and len(row["tools"]) < len(BROWSER_TOOLS) + 1:
            assert all("Chromium" in why or "Playwright" in why for why in row["hidden"].values())
        assert row["chars"] <= 1000 * shown, row
