"""Definitions under a budget: deferral, tool_search through the pipeline, per-session loading, the ranker hook.

The catalog is the benchmark's: real definitions of the built-ins and of MCP servers from PyPI and npm
(``benchmarks/catalog/tools.json``), registered with echo handlers.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from hermes_core import ToolSystem, hookimpl
from hermes_core.config import ConfigError
from hermes_core.selection import SEARCH_TOOL, ToolDoc, estimate_tokens

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks" / "catalog"))
from catalog import CatalogPlugin, load_tools, synthesize

CATALOG = load_tools()
MakeSystem = Callable[..., ToolSystem]


def names(definitions: list[dict[str, Any]]) -> list[str]:
    return [d["function"]["name"] if "function" in d else d["name"] for d in definitions]


def sent_tokens(definitions: list[dict[str, Any]]) -> int:
    return sum(estimate_tokens(d) for d in definitions if not d.get("defer_loading"))


@pytest.fixture
def make(tmp_path: Path) -> Iterator[MakeSystem]:
    made: list[ToolSystem] = []

    def build(
        tools: Sequence[dict[str, Any]] = CATALOG, tools_config: dict[str, Any] | None = None, **kw: Any
    ) -> ToolSystem:
        config = {"tools": {"search_core": ["file", "terminal"], **(tools_config or {})}}
        system = ToolSystem.load(
            plugins_dir=False,
            load_entry_points=False,
            plugins=[CatalogPlugin(tools), *kw.pop("plugins", ())],
            config=config,
            workspace=tmp_path,
            mcp=False,
            **kw,
        )
        made.append(system)
        return system

    yield build
    for system in made:
        system.close()


def search(system: ToolSystem, query: str, session: str = "s1", limit: int = 5) -> dict[str, Any]:
    outcome = system.call_outcome(SEARCH_TOOL, {"query": query, "limit": limit}, session_id=session)
    assert outcome.status == "ok", outcome.result
    return dict(json.loads(outcome.result))


def test_a_selection_that_fits_is_sent_whole_without_the_search_tool(make: MakeSystem) -> None:
    small = [t for t in CATALOG if t["toolset"] in ("mcp-time", "mcp-fetch")]
    system = make(small)
    sent = names(system.definitions())
    assert sorted(sent) == sorted(t["name"] for t in small)
    assert SEARCH_TOOL not in sent
    assert system.definitions() == system.definitions(search="off")
    on = names(system.definitions(search="on"))  # "on" defers even what would fit
    assert on == [SEARCH_TOOL]


def test_a_large_catalog_sends_core_and_the_search_tool_under_the_budget(make: MakeSystem) -> None:
    system = make()
    assert len(system.available()) >= 500
    sent = system.definitions()
    sent_names = names(sent)
    assert SEARCH_TOOL in sent_names
    assert {"read_file", "terminal"} <= set(sent_names)  # the configured core
    assert "github_create_issue" not in sent_names  # deferred...
    assert "github_create_issue" in system.available()  # ...but still selected
    assert sent_tokens(sent) <= 4_000
    everything = system.definitions(search="off")
    assert len(everything) == len(system.available()) - 1  # all but the search tool
    assert sent_tokens(everything) > 10 * 4_000


@pytest.mark.parametrize("size", [2_000, 10_000])
def test_definitions_stay_under_the_budget_whatever_the_catalog_size(make: MakeSystem, size: int) -> None:
    system = make(synthesize(CATALOG, size), {"search_budget": 3_000})
    for query in ("open a pull request", "list kubernetes pods", "send a slack message", "excel chart"):
        search(system, query)
    for fmt in ("openai", "anthropic", "gemini", "mcp"):
        assert sent_tokens(system.definitions(format=fmt, session_id="s1")) <= 3_000, fmt


def test_search_loads_tools_into_that_session_only(make: MakeSystem) -> None:
    system = make()
    found = search(system, "open a new issue on github about the broken login page")
    assert found["tools"][0]["name"] == "github_create_issue"
    first = found["tools"][0]
    assert first["summary"] and first["parameters"]["properties"]["title"]
    assert "github_create_issue" in names(system.definitions(session_id="s1"))
    assert "github_create_issue" not in names(system.definitions(session_id="s2"))
    assert "github_create_issue" not in names(
        system.definitions()
    )  # the system's own session searched nothing
    stats = system.loaded_tools("s1").stats()
    assert stats["searches"] == 1 and "github_create_issue" in stats["loaded"]
    system.close_session("s1")
    assert "github_create_issue" not in names(system.definitions(session_id="s1"))


def test_select_loads_named_tools_and_reports_unknown_names(make: MakeSystem) -> None:
    system = make()
    found = search(system, "select:git_status, kubectl_get,no_such_tool")
    assert [t["name"] for t in found["tools"]] == ["git_status", "kubectl_get"]
    assert found["unknown"] == ["no_such_tool"]
    sent = names(system.definitions(session_id="s1"))
    assert {"git_status", "kubectl_get"} <= set(sent)
    assert system.loaded_tools("s1").selected == 2


def test_a_deferred_tool_called_by_exact_name_runs_through_the_pipeline_and_is_counted(
    make: MakeSystem,
) -> None:
    system = make()
    system.definitions(session_id="s1")  # the session saw the deferred form
    outcome = system.call_outcome("git_status", {"repo_path": "/tmp"}, session_id="s1")
    assert outcome.status == "ok" and json.loads(outcome.result) == {"echo": {"repo_path": "/tmp"}}
    bad = system.call_outcome("git_log", {"max_count": "many"}, session_id="s1")
    assert bad.status == "error" and bad.error_kind == "invalid_arguments"  # the pipeline validated it
    loaded = system.loaded_tools("s1")
    assert loaded.direct_calls == 2
    assert {"git_status", "git_log"} <= set(names(system.definitions(session_id="s1")))
    system.call_outcome("git_status", {"repo_path": "/tmp"}, session_id="s1")
    assert loaded.direct_calls == 2  # loaded now: calling it again is not a blind call
    unknown = system.call_outcome("git_statuz", {}, session_id="s1")
    assert unknown.error_kind == "unknown_tool" and "git_status" in unknown.result


def test_least_recently_used_loaded_tools_drop_out_past_the_budget(make: MakeSystem) -> None:
    system = make(tools_config={"search_budget": 2_500})
    queries = [
        "create a jira issue",
        "list the pods in my cluster",
        "post a message to a slack channel",
        "take a screenshot of the page",
        "run a sql query on postgres",
        "search arxiv papers",
        "merge a pull request",
        "write cells to an excel sheet",
    ]
    for query in queries:
        search(system, query, limit=3)
    sent = system.definitions(session_id="s1")
    assert sent_tokens(sent) <= 2_500
    loaded = system.loaded_tools("s1").names()
    newest, oldest = loaded[-1], loaded[0]
    assert newest in names(sent)
    assert oldest not in names(sent)
    outcome = system.call_outcome(oldest, {}, session_id="s1")  # still callable; using it brings it back
    assert outcome.error_kind != "unknown_tool"
    assert oldest in names(system.definitions(session_id="s1"))


def test_core_tools_past_the_budget_become_searchable(make: MakeSystem) -> None:
    system = make(tools_config={"search_core": ["mcp-playwright-ea", "file"], "search_budget": 1_500})
    sent = system.definitions()
    assert sent_tokens(sent) <= 1_500
    left_out = [n for n in system.available() if n.startswith("playwright_") and n not in names(sent)]
    assert left_out
    assert search(system, f"select:{left_out[0]}")["tools"]


def test_the_core_is_kept_in_the_order_it_is_named(make: MakeSystem) -> None:
    first = make(tools_config={"search_core": ["git_status", "mcp-playwright-ea"], "search_budget": 1_500})
    sent = names(first.definitions())
    assert "git_status" in sent and "playwright_navigate" in sent  # named first: kept
    assert "playwright_click_and_switch_tab" not in sent  # the end of the toolset did not fit
    last = make(tools_config={"search_core": ["mcp-playwright-ea", "git_status"], "search_budget": 1_500})
    assert "git_status" not in names(last.definitions())


def test_disabling_the_search_tool_turns_deferral_off(make: MakeSystem) -> None:
    system = make()
    sent = names(system.definitions(disabled_tools=[SEARCH_TOOL]))
    assert SEARCH_TOOL not in sent and "github_create_issue" in sent
    refused = system.call_outcome(SEARCH_TOOL, {"query": "x"}, disabled=[SEARCH_TOOL])
    assert refused.error_kind == "unknown_tool"


def test_the_search_answers_only_from_the_callers_selection(make: MakeSystem) -> None:
    system = make(enabled=["file", "terminal", "mcp-github"], tools_config={"search": "on"})
    found = search(system, "list kubernetes pods")
    assert all(not t["name"].endswith("pods") for t in found["tools"])
    assert all(t["name"] in system.available() for t in found["tools"])


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"search": "sometimes"}, "search must be one of auto, on, off"),
        ({"search_budget": 10}, "at least 500"),
        ({"search_ranker": []}, "search_ranker"),
    ],
)
def test_bad_search_settings_are_errors(table: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ToolSystem.load(plugins_dir=False, load_entry_points=False, config={"tools": table}, mcp=False)


def test_a_bad_mode_argument_is_an_error(make: MakeSystem) -> None:
    with pytest.raises(ValueError, match="search must be one of"):
        make().definitions(search="maybe")


class ReverseAlphabet:
    """A ranker plugin: ranks by name, last first (easy to tell apart from the built-in ranking)."""

    def __init__(self, docs: Sequence[ToolDoc]) -> None:
        self.names = sorted((d.name for d in docs), reverse=True)

    def search(self, query: str, limit: int) -> list[tuple[str, float]]:
        return [(n, 1.0) for n in self.names[:limit]]


class RankerPlugin:
    @hookimpl
    def register_tool_rankers(self) -> dict[str, Any]:
        return {"reverse": ReverseAlphabet}


def test_a_plugin_ranker_replaces_or_joins_the_built_in_one(make: MakeSystem) -> None:
    replaced = make(plugins=[RankerPlugin()], tools_config={"search_ranker": "reverse"})
    last = max(n for n in replaced.available() if n not in {"read_file", SEARCH_TOOL})
    assert search(replaced, "create a github issue")["tools"][0]["name"] == last
    fused = make(plugins=[RankerPlugin()], tools_config={"search_ranker": ["bm25", "reverse"]})
    found = [t["name"] for t in search(fused, "create a github issue", limit=10)["tools"]]
    assert "github_create_issue" in found and last in found
    unknown = make(tools_config={"search_ranker": "nobody"})  # falls back to bm25, with a warning
    assert search(unknown, "create a github issue")["tools"][0]["name"] == "github_create_issue"
