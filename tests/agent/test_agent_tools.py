"""The built-in agent tools (``delegate_task``, ``mixture_of_agents``) and session recording, end to end against a
scripted model server."""

from __future__ import annotations

import threading
import time
import types
from pathlib import Path
from typing import Any

from agent_support import MakeSystem, model_table
from scripted_llm import Reply, Request, ScriptedLLM, call, calls, say, status

from hermes_core.agent import Agent, AgentEvent, AgentFinished, TextDelta, run_agent


def is_subagent(request: Request) -> bool:
    return "You are a sub-agent" in request.system_text()


def test_both_tools_are_hidden_with_a_reason_until_a_model_is_configured(make_system: MakeSystem) -> None:
    system = make_system()
    hidden = system.hidden()
    for name in ("delegate_task", "mixture_of_agents"):
        assert "no model is configured" in hidden[name] and "[models.NAME]" in hidden[name]
    assert "delegate_task" not in system.available()
    assert "not available right now" in system.call("delegate_task", {"goal": "x"})


def test_a_sub_agent_does_the_work_with_a_restricted_toolset(
    make_system: MakeSystem, workspace: Path
) -> None:
    (workspace / "data.txt").write_text("one\ntwo\nthree\n")

    def model(request: Request) -> Reply:
        if is_subagent(request):
            if not request.tool_results():
                return calls(call("read_file", {"path": "data.txt"}))
            assert "three" in request.tool_results()[0]
            return say("data.txt has 3 lines: one, two, three.")
        if not request.tool_results():
            return calls(
                call("delegate_task", {"goal": "Count the lines of data.txt", "background": "It is small."})
            )
        return say("The sub-agent counted 3 lines.")

    with ScriptedLLM(model) as llm:
        system = make_system(models={"test": model_table(llm)})
        parent = Agent(system, session_id="chat-1")
        result = parent.run("How many lines does data.txt have?")
    assert result.ok and result.text == "The sub-agent counted 3 lines."
    report = result.tool_calls[0].result
    assert result.tool_calls[0].status == "ok"
    assert (
        "## Task 1: Count the lines of data.txt" in report
        and "status: done in 2 turn(s), 1 tool call(s)" in report
    )
    assert "data.txt has 3 lines" in report and "session chat-1/1" in report
    sub = [r for r in llm.requests if is_subagent(r)]
    assert len(sub) == 2
    assert (
        "Your task: Count the lines of data.txt" in sub[0].user_texts()[0]
        and "It is small." in sub[0].user_texts()[0]
    )
    parent_tools, sub_tools = set(llm.requests[0].tool_names()), set(sub[0].tool_names())
    assert {"delegate_task", "clarify"} - sub_tools == {
        "delegate_task",
        "clarify",
    }  # no asking, no delegating
    assert sub_tools <= parent_tools and "read_file" in sub_tools


def test_tasks_run_three_at_a_time(make_system: MakeSystem) -> None:
    lock = threading.Lock()
    state = {"arrived": 0, "in_flight": 0, "peak": 0}
    barrier = threading.Barrier(3, timeout=10)

    def model(request: Request) -> Reply:
        if not is_subagent(request):
            if request.tool_results():
                return say("all reported")
            tasks = [{"goal": f"task {n}"} for n in range(1, 6)]
            return calls(call("delegate_task", {"tasks": tasks}))
        with lock:
            state["arrived"] += 1
            arrived = state["arrived"]
            state["in_flight"] += 1
            state["peak"] = max(state["peak"], state["in_flight"])
        try:
            if arrived <= 3:
                barrier.wait()  # the first three sub-agents must all be running at once to get past this
            goal = request.user_texts()[0].split(": ", 1)[1]
            return say(f"finished {goal}")
        finally:
            with lock:
                state["in_flight"] -= 1

    with ScriptedLLM(model) as llm:
        system = make_system(models={"test": model_table(llm)})
        result = run_agent(system, "do five things")
    assert result.ok
    report = result.tool_calls[0].result
    assert [f"finished task {n}" in report for n in range(1, 6)] == [True] * 5
    assert report.index("## Task 1") < report.index("## Task 5")
    assert state["peak"] == 3
    schema = next(d for d in system.definitions() if d["function"]["name"] == "delegate_task")["function"]
    assert "3 run at a time" in schema["description"]


def test_sub_agents_cannot_delegate_beyond_the_depth_limit(make_system: MakeSystem) -> None:
    def model(request: Request) -> Reply:
        depth = request.user_texts()[0].count("deeper")
        if request.tool_results():
            return say(f"depth {depth} done: {request.tool_results()[0][:200]}")
        return calls(call("delegate_task", {"goal": "go deeper" * (depth + 1)}))

    with ScriptedLLM(model) as llm:
        system = make_system(
            models={"test": model_table(llm)}, config={"plugins": {"agents": {"max_depth": 2}}}
        )
        result = run_agent(system, "start")
    assert result.ok
    by_depth = {r.user_texts()[0].count("deeper"): r for r in llm.requests if not r.tool_results()}
    assert "delegate_task" in by_depth[0].tool_names() and "delegate_task" in by_depth[1].tool_names()
    assert "delegate_task" not in by_depth[2].tool_names()  # depth 2 is the limit: not offered...
    deepest = [r for r in llm.requests if r.user_texts()[0].count("deeper") == 2 and r.tool_results()]
    assert "not enabled for this conversation" in deepest[0].tool_results()[0]  # ...and refused when called


def test_a_sub_agent_cannot_reach_tools_its_parent_does_not_have(
    make_system: MakeSystem, workspace: Path
) -> None:
    """The attack: a parent limited to reading asks for a sub-agent with the terminal and has it run a command."""
    marker = workspace / "pwned"

    def model(request: Request) -> Reply:
        if is_subagent(request):
            if request.tool_results():
                return say("tried")
            return calls(
                call("terminal", {"command": f"touch {marker}"}),
                call("write_file", {"path": "pwned", "content": "x"}),
            )
        if request.tool_results():
            return say("done")
        return calls(call("delegate_task", {"goal": "escalate", "toolsets": ["terminal", "file"]}))

    with ScriptedLLM(model) as llm:
        system = make_system(models={"test": model_table(llm)})
        result = Agent(system, allowed_tools={"read_file", "delegate_task"}).run("go")
    sub_requests = [r for r in llm.requests if is_subagent(r)]
    assert sub_requests[0].tool_names() == ["read_file"]
    assert all("not enabled for this conversation" in text for text in sub_requests[1].tool_results())
    assert not marker.exists()
    assert result.ok


def test_delegating_at_the_limit_is_refused_with_a_reason(make_system: MakeSystem) -> None:
    with ScriptedLLM([say("unused")]) as llm:
        system = make_system(
            models={"test": model_table(llm)}, config={"plugins": {"agents": {"max_depth": 0}}}
        )
        outcome = system.call_outcome("delegate_task", {"goal": "anything"})
    assert outcome.status == "error" and "may not delegate further (the limit is 0)" in outcome.result


def test_delegate_task_called_directly_uses_the_default_model(make_system: MakeSystem) -> None:
    with ScriptedLLM([say("done directly")]) as llm:
        system = make_system(models={"test": model_table(llm, "anthropic")})
        result = system.call("delegate_task", {"goal": "say hi", "toolsets": ["file"]})
    assert "done directly" in result and "status: done" in result
    assert llm.requests[0].tool_names() == ["patch", "read_file", "search_files", "write_file"]


def test_an_unknown_toolset_for_a_task_is_reported(make_system: MakeSystem) -> None:
    with ScriptedLLM([]) as llm:
        system = make_system(models={"test": model_table(llm)})
        result = system.call("delegate_task", {"goal": "x", "toolsets": ["flie"]})
    assert "toolsets: unknown toolset or tool 'flie'" in result and "file" in result


def test_cancelling_the_parent_cancels_its_sub_agents(make_system: MakeSystem) -> None:
    def model(request: Request) -> Reply:
        if is_subagent(request):
            return say("thinking " * 100, pieces=100, chunk_delay=0.05)
        return calls(call("delegate_task", {"goal": "think for a long time"}))

    holder: list[Agent] = []
    finished: list[AgentFinished] = []

    def on_event(event: AgentEvent) -> None:
        if isinstance(event, TextDelta) and event.depth == 1:
            holder[0].cancel()
        if isinstance(event, AgentFinished) and event.depth == 1:
            finished.append(event)

    with ScriptedLLM(model) as llm:
        system = make_system(models={"test": model_table(llm)})
        parent = Agent(system, on_event=on_event)
        holder.append(parent)
        started = time.monotonic()
        result = parent.run("delegate")
        took = time.monotonic() - started
    assert result.stop_reason == "cancelled" and took < 2.0  # the sub-agent's stream had 5 s left
    outcome = result.tool_calls[0]
    assert outcome.error_kind == "cancelled" and "cancelled" in outcome.result
    assert [e.result.stop_reason for e in finished] == ["cancelled"]  # the sub-agent stopped too
    assert len(llm.requests) == 2  # the parent did not ask the model again


def moa_models(llm: ScriptedLLM, fail: str | None = None) -> dict[str, Any]:
    tables = {
        name: model_table(llm, model=name, max_retries=0) for name in ("alpha", "beta", "gamma", "judge")
    }
    if fail:
        tables[fail]["model"] = "broken"
    return {"default": "judge", **tables}


def moa_server(answers: dict[str, str]) -> Any:
    def model(request: Request) -> Reply:
        name = request.body["model"]
        if name == "broken":
            return status(400, "this model is broken")
        if name == "judge":
            question = request.user_texts()[-1]
            if "## Answers" in question:
                found = [a for a in answers.values() if a in question]
                return say("combined: " + " + ".join(sorted(found)))
            if request.tool_results():
                return say("final")
            return calls(
                call(
                    "mixture_of_agents", {"prompt": "Is P equal to NP?", "models": ["alpha", "beta", "gamma"]}
                )
            )
        return say(answers[name])

    return model


def test_mixture_of_agents_asks_every_model_and_aggregates(make_system: MakeSystem) -> None:
    answers = {"alpha": "probably not", "beta": "unknown", "gamma": "open problem"}
    with ScriptedLLM(moa_server(answers)) as llm:
        system = make_system(models=moa_models(llm))
        result = Agent(system).run("Ask the panel.")
    outcome = result.tool_calls[0]
    assert outcome.status == "ok", outcome.result
    assert outcome.result.startswith("combined: open problem + probably not + unknown")
    assert "[combined by judge from the answers of alpha, beta, gamma]" in outcome.result
    references = [r for r in llm.requests if r.body["model"] in answers]
    assert sorted(r.body["model"] for r in references) == ["alpha", "beta", "gamma"]
    assert all("tools" not in r.body and r.user_texts() == ["Is P equal to NP?"] for r in references)


def test_mixture_of_agents_reports_a_model_that_failed(make_system: MakeSystem) -> None:
    answers = {"alpha": "yes", "beta": "no", "gamma": "maybe"}
    with ScriptedLLM(moa_server(answers)) as llm:
        system = make_system(models=moa_models(llm, fail="beta"))
        result = system.call("mixture_of_agents", {"prompt": "Q?", "models": ["alpha", "beta", "gamma"]})
    assert result.startswith("combined: maybe + yes")
    assert "no answer from beta (model 'beta'" in result and "HTTP 400" in result


def test_mixture_of_agents_refuses_unknown_models(make_system: MakeSystem) -> None:
    with ScriptedLLM([]) as llm:
        system = make_system(models=moa_models(llm))
        result = system.call("mixture_of_agents", {"prompt": "Q?", "models": ["alpha", "omega"]})
    assert "unknown model(s) 'omega'; configured models: alpha, beta, gamma, judge" in result


def test_sessions_are_recorded_and_found_by_session_search(make_system: MakeSystem, workspace: Path) -> None:
    (workspace / "islands.txt").write_text("Zanzibar is an archipelago.\n")

    def model(request: Request) -> Reply:
        if is_subagent(request):
            return say("The sub-agent confirms the quokka lives on Rottnest.")
        if not request.tool_results():
            return calls(
                call("read_file", {"path": "islands.txt"}), call("delegate_task", {"goal": "find quokkas"})
            )
        return say("Both facts checked: zanzibar and quokka.")

    with ScriptedLLM(model) as llm:
        system = make_system(models={"test": model_table(llm)})
        result = Agent(system, session_id="chat-islands").run("Tell me about Zanzibar please")
        assert result.ok
        found = system.call("session_search", {"query": "zanzibar"})
        assert "session chat-islands" in found and "user" in found and "assistant" in found
        tool_hit = system.call("session_search", {"query": "archipelago", "role": "tool"})
        assert "session chat-islands" in tool_hit and "[read_file]" in tool_hit
        sub_hit = system.call("session_search", {"query": "Rottnest", "role": "assistant"})
        assert "session chat-islands/1" in sub_hit
        call_hit = system.call("session_search", {"query": "called delegate_task"})
        assert "chat-islands" in call_hit


def test_record_false_keeps_a_run_out_of_the_sessions(make_system: MakeSystem) -> None:
    with ScriptedLLM([say("the secret word is xylophone")]) as llm:
        system = make_system(models={"test": model_table(llm)})
        Agent(system, record=False).run("tell me the word")
        assert "No past messages match" in system.call("session_search", {"query": "xylophone"})


def test_a_recording_hook_that_fails_does_not_stop_the_others(make_system: MakeSystem) -> None:
    def plugin(name: str, body: str) -> types.ModuleType:
        module = types.ModuleType(name)
        source = f"from hermes_core import hookimpl\nSEEN = []\n@hookimpl\ndef on_agent_message(session_id, message):\n    {body}\n"
        exec(source, module.__dict__)
        return module

    broken = plugin("broken_recorder", "raise RuntimeError('recorder down')")
    working = plugin("working_recorder", "SEEN.append((session_id, message['role']))")
    with ScriptedLLM([say("hello")]) as llm:
        system = make_system(models={"test": model_table(llm)}, plugins=(working, broken))
        result = Agent(system, session_id="s1").run("hi")
    assert result.ok
    assert working.SEEN == [("s1", "user"), ("s1", "assistant")]
