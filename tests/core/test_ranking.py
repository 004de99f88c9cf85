"""The built-in lexical ranker (``hermes_core.selection.BM25Ranker``) on small hand-made catalogs.

Each test pins one retrieval behaviour at the public surface: ``BM25Ranker(docs).search(query, limit)``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hermes_core import ToolSystem
from hermes_core.selection import BM25Ranker, ToolDoc

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks" / "catalog"))
from catalog import CatalogPlugin


def ranked(docs: list[tuple[str, str]], query: str, limit: int = 5) -> list[str]:
    ranker = BM25Ranker([ToolDoc(name, description) for name, description in docs])
    return [name for name, _ in ranker.search(query, limit)]


HOOKS = [
    ("webhook", "Registers a callback URL."),
    ("web_search", "Search the web."),
    ("web_fetch", "Fetch a web page."),
    ("git_hook_install", "Install a git hook in a repository."),
    ("hook_list", "List the hooks of a repository."),
]


def test_a_word_counts_once_however_many_of_its_synonyms_a_tool_mentions() -> None:
    # "show" stands for get, list, view, read...: a tool that names all of them is not four times as relevant
    docs = [
        ("queue_list", "List the queues of a message broker."),
        ("queue_inspect", "Get, view, read and display the details of one queue."),
        ("broker_status", "Status of the broker."),
    ]
    assert ranked(docs, "show me the queues")[0] == "queue_list"


def test_a_compound_name_is_found_by_its_parts() -> None:
    # "webhook" is "web" + "hook", both words the catalog uses more often than the compound
    assert ranked(HOOKS, "add a web hook")[0] == "webhook"
    assert ranked(HOOKS, "web hooks")[0] == "webhook"
    assert "webhook" in ranked(HOOKS, "hook")


def test_a_word_common_on_its_own_is_not_split() -> None:
    docs = [
        ("download", "Download a file."),
        ("file_download", "Download one file to disk."),
        ("url_download", "Download what a URL points to."),
        ("page_down", "Scroll down a page."),
        ("model_load", "Load a model."),
    ]
    # "download" is far more common than "down" and "load": it is a word of its own, not split
    assert ranked(docs, "load")[0] == "model_load"
    assert "download" not in ranked(docs, "load")


def test_an_unnamed_plugins_made_up_label_is_not_searched(tmp_path: Path) -> None:
    # an in-process plugin without a name is labelled after its object id: those letters mean nothing
    tools = [
        {"name": "queue_list", "toolset": "queues", "description": "List the queues.", "parameters": {}},
        {"name": "queue_purge", "toolset": "queues", "description": "Empty a queue.", "parameters": {}},
    ]
    system = ToolSystem.load(
        plugins_dir=False,
        load_entry_points=False,
        plugins=[CatalogPlugin(tools, with_search=True)],
        config={"tools": {"search": "on", "search_core": ["terminal"]}},
        workspace=tmp_path,
        mcp=False,
    )
    try:
        label = system.registry["queue_list"].plugin
        assert label and label.startswith("plugin-")
        assert system.search_tools(label.removeprefix("plugin-"), load=False, everything=True).matches == []
        assert system.search_tools("list queues", load=False).matches[0].name == "queue_list"
    finally:
        system.close()


def test_a_long_parameter_list_does_not_dilute_what_the_name_says() -> None:
    long = tuple(
        (f"option_{n}", "A setting of the delivery, described at some length " * 4) for n in range(12)
    )
    ranker = BM25Ranker(
        [ToolDoc("send_invoice", "Deliver it.", long), ToolDoc("invoice_send", "Deliver it.")]
    )
    (first, a), (second, b) = ranker.search("send invoice", 2)
    assert a == pytest.approx(b)  # the same words in names of the same length: the same evidence
    assert (first, second) == ("send_invoice", "invoice_send")  # equal scores: the tool registered first
