"""The kanban's worker verbs with leases and fencing, and the dispatcher handing ready tasks to sub-agents."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from scripted_llm import Request, say

from hermes_builtin.kanban import Board, Dispatcher
from hermes_core.cli import cli


def test_a_lapsed_heartbeat_lease_frees_the_claim_and_fences_the_old_worker(make_system: Any) -> None:
    system = make_system(config={"plugins": {"kanban": {"lease": 1}}})
    call = system.call
    assert call("kanban_create", {"title": "index the docs"}) == "Created task #1: index the docs"
    assert call("kanban_claim", {"task_id": 1}, session_id="w1").startswith("Claimed: #1 [in_progress]")
    assert "renewed" in call("kanban_heartbeat", {"task_id": 1}, session_id="w1")
    assert "claimed by w1" in call("kanban_claim", {"task_id": 1}, session_id="w2")  # the lease holds
    time.sleep(1.3)  # w1 stops heartbeating: its lease runs out
    assert "No task" not in call("kanban_list", {"ready": True}, session_id="w2")
    assert call("kanban_claim", {}, session_id="w2").startswith("Claimed: #1")
    late = call("kanban_complete", {"task_id": 1, "result": "stale"}, session_id="w1")
    assert "your claim on task #1 is gone" in late and "held by w2" in late
    assert "your claim" in call("kanban_heartbeat", {"task_id": 1}, session_id="w1")
    assert call("kanban_complete", {"task_id": 1, "result": "indexed"}, session_id="w2").startswith(
        "Done: #1 [done]"
    )
    shown = call("kanban_show", {"task_id": 1})
    assert "result: indexed" in shown and "stale" not in shown


def test_worker_verbs_comment_attach_link_block_unblock(make_system: Any, workspace: Path) -> None:
    system = make_system()
    call = system.call
    call("kanban_create", {"title": "a"})
    call("kanban_create", {"title": "b"})
    (workspace / "notes.md").write_text("findings\n")
    assert "attachment 1" in call("kanban_attach", {"task_id": 1, "path": "notes.md"})
    assert "denied" in system.call_outcome("kanban_attach", {"task_id": 1, "path": "/etc/shadow"}).status
    call("kanban_comment", {"task_id": 1, "body": "halfway"}, session_id="w1")
    call("kanban_link", {"task_id": 2, "other_id": 1, "kind": "depends_on"})
    call("kanban_link", {"task_id": 2, "other_id": 1, "kind": "relates_to"})
    assert "waits on unfinished dependencies: #1" in call("kanban_claim", {"task_id": 2})
    assert "already depends" in call("kanban_link", {"task_id": 1, "other_id": 2, "kind": "depends_on"})
    shown = call("kanban_show", {"task_id": 1})
    assert "notes.md" in shown and "w1" in shown and "halfway" in shown and "needed by: #2" in shown
    assert call("kanban_show", {"task_id": 1, "attachment": 1}).endswith("findings\n")
    assert call("kanban_block", {"task_id": 1, "reason": "needs the API key"}).startswith("Blocked: #1")
    assert "blocked" in call("kanban_claim", {"task_id": 1})
    assert call("kanban_unblock", {"task_id": 1, "comment": "key added"}).startswith("Unblocked: #1 [todo]")
    assert "key added" in call("kanban_show", {"task_id": 1})


def _worker_reply(request: Request) -> Any:
    task = next(m["content"] for m in request.messages if m["role"] == "user")
    title = task.split(":", 1)[1].split("\n", 1)[0].strip()
    time.sleep(0.3)  # long enough for the running workers to overlap
    return say(f"report for {title}")


def _models(url: str) -> dict[str, Any]:
    return {"default": "w", "w": {"provider": "openai", "base_url": url, "model": "w", "timeout": 10.0}}


def test_the_dispatcher_runs_ready_tasks_through_sub_agents_and_respects_a_dependency(
    make_system: Any,
) -> None:
    from scripted_llm import ScriptedLLM

    with ScriptedLLM(_worker_reply) as llm:
        system = make_system(config={"models": _models(llm.openai_url)})
        board = Board.for_system(system)
        a = board.create("alpha", created_by="lead")
        b = board.create("beta", created_by="lead")
        c = board.create("gamma", created_by="lead", depends_on=[a])
        running = []
        peak = [0]
        lock = threading.Lock()

        def watch(event: str) -> None:
            with lock:
                if event.endswith(")") and "started" in event:
                    running.append(event)
                elif ": done" in event or "blocked" in event:
                    running.pop()
                peak[0] = max(peak[0], len(running))

        report = Dispatcher(system, concurrency=2, on_event=watch).run()
    assert sorted(report.completed) == [a, b, c] and not report.blocked and not report.lost
    assert report.order.index(c) > report.order.index(a)  # gamma waited for alpha
    assert set(report.order[:2]) == {a, b} and peak[0] == 2  # the cap held, and was used
    for task_id, title in ((a, "alpha"), (b, "beta"), (c, "gamma")):
        task = board.get(task_id)
        assert task["status"] == "done" and task["result"] == f"report for {title}" and task["owner"] is None
    sessions = {r.messages[0]["content"][:40] for r in llm.requests}
    assert len(llm.requests) == 3 and all("worker agent" in s for s in sessions)


def test_hermes_kanban_dispatch_blocks_a_task_whose_worker_fails(make_system: Any) -> None:
    from scripted_llm import ScriptedLLM, status

    with ScriptedLLM([status(400, "bad request")]) as llm:
        home = Path(os.environ["HERMES_HOME"])
        (home / "config.toml").write_text(
            f'[models]\ndefault = "w"\n[models.w]\nprovider = "openai"\nbase_url = "{llm.openai_url}"\n'
            'model = "w"\ntimeout = 10.0\nmax_retries = 0\n'
        )
        board = Board.for_system(make_system())
        task = board.create("doomed", created_by="lead")
        result = CliRunner().invoke(cli, ["kanban", "dispatch"], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert f"#{task}: blocked" in result.stdout
    assert board.get(task)["status"] == "blocked" and "the worker stopped" in board.get(task)["blocker"]
    listed = CliRunner().invoke(cli, ["kanban", "list", "--status", "all"]).stdout
    assert json.dumps("doomed")[1:-1] in listed
