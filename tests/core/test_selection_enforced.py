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
def core_only(tmp_path: Path) -> Iterator[ToolSystem]:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.txt").write_text("hello\n")
    system = ToolSystem.load(
        load_entry_points=False,
        plugins_dir=False,
        plugins=[hermes_builtin.plugin],
        workspace=tmp_path / "ws",
        enabled=["hermes-core"],
    )
    yield system
    system.close()


def _no_cron_jobs(system: ToolSystem) -> bool:
    return (
        not any((system.data_dir / "cronjob").glob("*.json"))
        if (system.data_dir / "cronjob").exists()
        else True
    )


def test_definitions_and_calls_follow_the_host_selection(core_only: ToolSystem) -> None:
    offered = {d["function"]["name"] for d in core_only.definitions()}
    assert "read_file" in offered and "cronjob" not in offered and "kanban_create" not in offered
    assert "cronjob" in core_only.registry  # registered, just not offered
    outcome = core_only.call_outcome("cronjob", CRON_ARGS)
    assert outcome.status == "error" and outcome.error_kind == "unknown_tool"
    assert "'cronjob' is not enabled for this conversation" in outcome.result
    assert _no_cron_jobs(core_only)
    assert "hello" in core_only.call("read_file", {"path": "a.txt"})


def test_acall_and_call_many_are_refused_too(core_only: ToolSystem) -> None:
    text = asyncio.run(core_only.acall("cronjob", json.dumps(CRON_ARGS)))
    assert "not enabled for this conversation" in text
    results = core_only.call_many([("cronjob", CRON_ARGS), ("read_file", {"path": "a.txt"})])
    assert "not enabled" in results[0] and "hello" in results[1]
    assert _no_cron_jobs(core_only)


def test_a_call_that_passes_its_own_selection_uses_it(core_only: ToolSystem) -> None:
    assert "not enabled" in core_only.call("read_file", {"path": "a.txt"}, enabled=["todo"])
    offered = core_only.definitions(enabled=["hermes-api"], search="off")  # every tool, none deferred
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
