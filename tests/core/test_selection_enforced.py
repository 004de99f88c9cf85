"""The host's selection (``ToolSystem.load(enabled=..., disabled=...)``) is what the model sees and all it can
run: ``call``, ``acall`` and ``call_many`` refuse any other tool with a message, and the tool never runs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import hermes_builtin.plugin
from hermes_core import ToolSystem

CRON_ARGS = {"action": "create", "schedule": "every 1m", "prompt": "x", "command": "rm -rf .ssh .aws"}


@pytest.fixture
def cli_only(tmp_path: Path) -> Iterator[ToolSystem]:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.txt").write_text("hello\n")
    system = ToolSystem.load(
        load_entry_points=False,
        plugins_dir=False,
        plugins=[hermes_builtin.plugin],
        workspace=tmp_path / "ws",
        enabled=["hermes-cli"],
    )
    yield system
    system.close()


def _no_cron_jobs(system: ToolSystem) -> bool:
    return (
        not any((system.data_dir / "cronjob").glob("*.json"))
        if (system.data_dir / "cronjob").exists()
        else True
    )


def test_definitions_and_calls_follow_the_host_selection(cli_only: ToolSystem) -> None:
    offered = {d["function"]["name"] for d in cli_only.definitions()}
    assert "read_file" in offered and "cronjob" not in offered and "kanban_create" not in offered
    assert "cronjob" in cli_only.registry  # registered, just not offered
    outcome = cli_only.call_outcome("cronjob", CRON_ARGS)
    assert outcome.status == "error" and outcome.error_kind == "unknown_tool"
    assert "'cronjob' is not enabled for this conversation" in outcome.result
    assert _no_cron_jobs(cli_only)
    assert "hello" in cli_only.call("read_file", {"path": "a.txt"})


def test_acall_and_call_many_are_refused_too(cli_only: ToolSystem) -> None:
    text = asyncio.run(cli_only.acall("cronjob", json.dumps(CRON_ARGS)))
    assert "not enabled for this conversation" in text
    results = cli_only.call_many([("cronjob", CRON_ARGS), ("read_file", {"path": "a.txt"})])
    assert "not enabled" in results[0] and "hello" in results[1]
    assert _no_cron_jobs(cli_only)


def test_a_call_that_passes_its_own_selection_uses_it(cli_only: ToolSystem) -> None:
    assert "not enabled" in cli_only.call("read_file", {"path": "a.txt"}, enabled=["todo"])
    offered = cli_only.definitions(enabled=["hermes-api"], search="off")  # every tool, none deferred
    assert "kanban_list" in {d["function"]["name"] for d in offered}


def test_disabled_at_load_is_enforced(tmp_path: Path) -> None:
    with ToolSystem.load(
        load_entry_points=False,
        plugins_dir=False,
        plugins=[hermes_builtin.plugin],
        disabled=["cronjob", "terminal"],
    ) as system:
        names = {d["function"]["name"] for d in system.definitions()}
        assert "cronjob" not in names and "terminal" not in names and "read_file" in names
        assert "not enabled" in system.call("terminal", {"command": "echo ran"})
        assert "not enabled" in system.call("cronjob", CRON_ARGS)


def test_an_empty_selection_offers_and_runs_nothing() -> None:
    with ToolSystem.load(
        load_entry_points=False, plugins_dir=False, plugins=[hermes_builtin.plugin], enabled=[]
    ) as system:
        assert system.definitions() == []
        assert "not enabled" in system.call("read_file", {"path": "x"})
