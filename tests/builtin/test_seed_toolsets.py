"""The built-in toolsets as the seed describes them: ``hermes-core`` the shared baseline, ``hermes-cli`` the full
interactive set (40+ tools with everything configured, browser included), the platform sets built on them; the
seed's example "enable hermes-cli, disable homeassistant" changes what the model sees; definitions stay lean."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from hermes_builtin.toolsets import BROWSER_TOOLS, CORE, TOOLSETS
from hermes_core import ToolSystem
from hermes_core.cli import cli
from hermes_core.schema import render

UNUSED = "http://127.0.0.1:9"  # nothing listens: configured, never called
EVERYTHING: dict[str, object] = {
    "models": {"local": {"base_url": f"{UNUSED}/v1", "model": "m"}},
    "plugins": {
        "web": {"searxng_url": UNUSED},
        "vision": {"base_url": f"{UNUSED}/v1", "model": "m"},
        "images": {"api_key": "sk-test", "base_url": f"{UNUSED}/v1"},
        "video": {"api_key": "sk-test", "base_url": f"{UNUSED}/v1"},
        "tts": {"api_key": "sk-test", "base_url": f"{UNUSED}/v1"},
        "telegram": {"bot_token": "123:abc", "base_url": UNUSED},
        "homeassistant": {"url": UNUSED, "token": "t"},
    },
}
HOMEASSISTANT = {"ha_list_entities", "ha_get_state", "ha_list_services", "ha_call_service"}


def _configured(make: Callable[..., ToolSystem]) -> ToolSystem:
    return make(config=EVERYTHING, ask_user=lambda question, choices: "yes")


def _browser_ready() -> bool:
    import importlib.util

    return importlib.util.find_spec("playwright") is not None and shutil.which("chromium") is not None


def test_hermes_cli_is_the_full_interactive_set(make_builtin_system: Callable[..., ToolSystem]) -> None:
    system = _configured(make_builtin_system)
    core = system.toolsets.resolve(["hermes-core"])
    cli_set = system.toolsets.resolve(["hermes-cli"])
    assert core == set(CORE) and core < cli_set
    assert (
        len(cli_set) == 53 and {"browser_navigate", "cronjob", "kanban_create", "text_to_speech"} <= cli_set
    )
    assert not {"discord", "discord_admin", "feishu_doc_read"} & cli_set  # the platforms' own tools
    # CI installs Playwright and Chromium (.ci/run): there every member is usable, 53 tools
    expected = cli_set if _browser_ready() else cli_set - set(BROWSER_TOOLS)
    assert system.available(enabled=["hermes-cli"]) == expected, system.hidden(enabled=["hermes-cli"])


def test_enable_hermes_cli_disable_homeassistant(make_builtin_system: Callable[..., ToolSystem]) -> None:
    system = _configured(make_builtin_system)
    full = {
        d["function"]["name"] for d in system.definitions(enabled=["hermes-cli"], disabled=[], search="off")
    }
    assert full >= HOMEASSISTANT
    without = {
        d["function"]["name"]
        for d in system.definitions(enabled=["hermes-cli"], disabled=["homeassistant"], search="off")
    }
    assert without == full - HOMEASSISTANT
    outcome = system.call_outcome(
        "ha_get_state", {"entity_id": "light.kitchen"}, enabled=["hermes-cli"], disabled=["homeassistant"]
    )
    assert outcome.error_kind == "unknown_tool" and "not enabled" in outcome.result


def test_platform_sets_are_built_on_the_baseline(make_builtin_system: Callable[..., ToolSystem]) -> None:
    system = make_builtin_system()
    core = system.toolsets.resolve(["hermes-core"])
    for name in (
        "hermes-telegram",
        "hermes-discord",
        "hermes-slack",
        "hermes-feishu",
        "hermes-homeassistant",
    ):
        assert core < system.toolsets.resolve([name]), name
    api = system.toolsets.resolve(["hermes-api-server"])
    assert api == system.toolsets.resolve(["hermes-cli"]) - {"clarify", "send_message"}
    assert system.toolsets.resolve(["hermes-api"]) == api  # the former name still works
    assert not system.toolsets.problems()
    assert all("includes" not in spec or set(spec["includes"]) <= set(TOOLSETS) for spec in TOOLSETS.values())


def test_hermes_toolsets_shows_members_and_sizes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, hermes_home: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HERMES_LOAD_PLUGINS", "builtin")
    result = CliRunner().invoke(cli, ["toolsets", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.stdout)["toolsets"]}
    cli_row = rows["hermes-cli"]
    assert len(cli_row["members"]) == 53 and set(cli_row["tools"]) <= set(cli_row["members"])
    assert cli_row["chars"] > rows["hermes-core"]["chars"] > 0
    plain = CliRunner().invoke(cli, ["toolsets"], catch_exceptions=False)
    line = next(x for x in plain.stdout.splitlines() if x.startswith("hermes-cli\t"))
    assert line.split("\t")[3] == "53"


def test_average_builtin_definition_stays_under_800_characters(
    make_builtin_system: Callable[..., ToolSystem],
) -> None:
    """Every built-in as the model is sent it (OpenAI format, dynamic overrides applied, everything configured)."""
    system = _configured(make_builtin_system)
    everything = frozenset(system.registry.names())
    sizes = {
        e.name: len(json.dumps(render(system.tool_schema(e, everything), "openai")))
        for e in system.registry.entries()
    }
    assert len(sizes) >= 53  # the built-ins (other plugins are not loaded here)
    average = sum(sizes.values()) / len(sizes)
    assert average < 800, (average, sorted(sizes.items(), key=lambda kv: -kv[1])[:8])


def test_no_builtin_definition_is_over_1000_characters(
    make_builtin_system: Callable[..., ToolSystem],
) -> None:
    """Each built-in's registered schema, the schema with its dynamic override applied, and the definitions
    ``definitions(enabled=["all"])`` sends, search off (every available tool in full) and on (``tool_search``
    naming what it defers)."""
    system = _configured(make_builtin_system)
    everything = frozenset(system.registry.names())
    sizes: dict[str, int] = {}
    for entry in system.registry.entries():
        sent = render(system.tool_schema(entry, everything), "openai")
        sizes[entry.name] = max(len(json.dumps(entry.schema)), len(json.dumps(sent)))
    sent_all = system.definitions(enabled=["all"], search="off")
    assert len(sent_all) >= 50  # the configured ones; Discord, Feishu and a display are not configured here
    for definition in [*sent_all, *system.definitions(enabled=["all"], search="on")]:
        name = definition["function"]["name"]
        sizes[name] = max(sizes[name], len(json.dumps(definition)))
    over = sorted(((size, name) for name, size in sizes.items() if size > 1000), reverse=True)
    assert not over, "definitions over 1,000 characters: " + ", ".join(f"{n} {s}" for s, n in over)
