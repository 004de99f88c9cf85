"""Agent jobs against a scripted model server: the answer is delivered (a file, a session, Telegram), the job
runs in its own workspace with its creator's tools, and nobody is asked to approve anything."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from pytest_httpserver import HTTPServer
from scripted_llm import ScriptedLLM, call, calls, say

from hermes_core.scheduler import Job, JobStore, Scheduler


def _models(llm: ScriptedLLM) -> dict[str, Any]:
    return {
        "default": "scripted",
        "scripted": {
            "provider": "openai",
            "base_url": llm.openai_url,
            "model": "scripted",
            "timeout": 10.0,
            "max_retries": 1,
        },
    }


def _agent_job(workspace: Path, **spec: Any) -> Job:
    now = time.time()
    fields: dict[str, Any] = {
        "id": "digest",
        "name": "digest",
        "schedule": "every:1h",
        "kind": "agent",
        "prompt": "Summarise notes.txt in one line.",
        "workspace": str(workspace),
        "created_at": now,
        "anchor": int(now) - 3600,  # a slot is due now
    }
    fields.update(spec)
    return Job(**fields)


class _Approver:
    def __init__(self) -> None:
        self.requests: list[Any] = []

    def approve(self, request: Any) -> str:
        self.requests.append(request)
        return "once"


def test_an_agent_job_reads_its_workspace_and_delivers_its_answer_to_a_file_and_a_session(
    make_system: Any, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    elsewhere = tmp_path / "host"
    elsewhere.mkdir()
    script = [calls(call("read_file", {"path": "notes.txt"})), say("Three notes: alpha, beta, gamma.")]
    with ScriptedLLM(script) as llm:
        system = make_system(config={"models": _models(llm)}, workspace=elsewhere)  # the host runs elsewhere
        store = JobStore.for_system(system)
        store.add(_agent_job(workspace, deliver=["file:reports/{date}.md", "session:digests"]))
        (run,) = Scheduler(system).run_pending()
        seen = llm.requests[1].tool_results()
    assert run.status == "ok", run.output
    assert "alpha" in json.dumps(seen)  # the read_file call ran in the job's workspace
    (report,) = (workspace / "reports").iterdir()
    assert report.name == time.strftime("%Y-%m-%d.md", time.gmtime(run.slot))
    assert report.read_text() == "Three notes: alpha, beta, gamma.\n"
    assert not (elsewhere / "reports").exists()
    assert (
        run.output.startswith("Three notes")
        and "written to" in run.output
        and "session digests" in run.output
    )
    found = system.call("session_search", {"query": "alpha beta gamma"})
    assert "digests" in found and run.session_id in found  # the answer and the whole run are in the store
    assert [r.status for r in store.history("digest")] == ["ok"]


def test_an_agent_job_runs_headless_even_in_a_host_that_asks(make_system: Any, workspace: Path) -> None:
    script = [
        calls(call("terminal", {"command": "mkfs.ext4 /dev/hermes-test-no-such-device"})),  # needs approval
        say("I could not format the device: it needs approval."),
    ]
    approver = _Approver()
    with ScriptedLLM(script) as llm:
        system = make_system(config={"models": _models(llm)}, approver=approver)
        JobStore.for_system(system).add(_agent_job(workspace, prompt="Format the spare device."))
        (run,) = Scheduler(system).run_pending()
        shown = json.dumps(llm.requests[1].tool_results())
    assert run.status == "ok" and "needs approval" in run.output
    assert "approval" in shown and approver.requests == []  # denied without asking the host's human


def test_an_agent_job_gets_only_its_creators_tools_and_its_skills(make_system: Any, workspace: Path) -> None:
    with ScriptedLLM([say("done")]) as llm:
        system = make_system(config={"models": _models(llm)})
        selection = ["read_file", "skill_view", "clarify", "cronjob"]
        job = _agent_job(workspace, selection=selection, skills=["code-review"], deliver=[])
        JobStore.for_system(system).add(job)
        (run,) = Scheduler(system).run_pending()
        request = llm.requests[0]
    assert run.status == "ok", run.output
    offered = {t["function"]["name"] for t in request.body["tools"]}
    assert offered == {"read_file", "skill_view"}  # never clarify (nobody answers) nor cronjob
    prompt = request.messages[-1]["content"]
    assert "## Skill: code-review" in prompt and prompt.endswith("Summarise notes.txt in one line.")


def test_an_agent_job_delivers_to_telegram_through_send_message(
    make_system: Any, workspace: Path, httpserver: HTTPServer
) -> None:
    token = "123:fake-telegram-token"
    httpserver.expect_request(f"/bot{token}/sendMessage", method="POST").respond_with_json(
        {"ok": True, "result": {"message_id": 7, "chat": {"id": -100}}}
    )
    telegram = {
        "bot_token": token,
        "base_url": httpserver.url_for("/").rstrip("/"),
        "default_chat_id": "-100",
    }
    with ScriptedLLM([say("Daily digest: all green.")]) as llm:
        system = make_system(config={"models": _models(llm), "plugins": {"telegram": telegram}})
        JobStore.for_system(system).add(_agent_job(workspace, deliver=["telegram"]))
        (run,) = Scheduler(system).run_pending()
    assert run.status == "ok", run.output
    (sent,) = [json.loads(r.get_data()) for r, _ in httpserver.log]
    assert sent["chat_id"] == "-100" and sent["text"] == "Daily digest: all green."
    assert "sent to telegram" in run.output


def test_a_failed_delivery_fails_the_run_and_keeps_the_answer(make_system: Any, workspace: Path) -> None:
    with ScriptedLLM([say("the answer")]) as llm:
        system = make_system(config={"models": _models(llm)})
        JobStore.for_system(system).add(_agent_job(workspace, deliver=["file:../outside.txt"]))
        (run,) = Scheduler(system).run_pending()
    assert run.status == "error" and run.output.startswith("the answer") and "delivery failed" in run.output
    assert not (workspace.parent / "outside.txt").exists()
