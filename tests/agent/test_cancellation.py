"""Cancelling a run reaches everything it started: the model request (even a silent one), the running tools (a
command's process tree is killed, checked by pid), sub-agents with their tools and approval prompts, and a
tool stuck where nothing can interrupt it; ``run`` returns within a second in each case."""

from __future__ import annotations

import json
import threading
import time
import types
from pathlib import Path
from typing import Any

from agent_support import MakeSystem, model_table
from scripted_llm import Reply, Request, ScriptedLLM, call, calls, say

from hermes_core import hookimpl
from hermes_core.agent import Agent, AgentEvent, ToolCallStarted
from hermes_core.security import ApprovalRequest, CallbackApprover
from hermes_core.testing import processes_gone, processes_with_arg, sleep_marker


def cancel_when(agent_box: list[Agent], predicate: Any, delay: float = 0.0) -> threading.Thread:
    """A thread that cancels ``agent_box[0]`` once ``predicate()`` holds (then after ``delay`` seconds)."""

    def watch() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not predicate():
            time.sleep(0.02)
        time.sleep(delay)
        agent_box[0].cancel()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def timed_run(agent: Agent, prompt: str) -> tuple[Any, float, float]:
    """``agent.run(prompt)``; returns the result, when it returned and how long it took."""
    started = time.monotonic()
    result = agent.run(prompt)
    ended = time.monotonic()
    return result, ended, ended - started


def test_cancel_kills_the_running_command_and_returns_at_once(make_system: MakeSystem) -> None:
    marker = sleep_marker()
    script = [calls(call("terminal", {"command": f"sleep {marker}", "timeout": 120})), say("never asked")]
    with ScriptedLLM(script) as llm:
        system = make_system(models={"test": model_table(llm)})
        agent = Agent(system, toolsets=["terminal"])
        cancelled_at: list[float] = []

        def running() -> bool:
            return bool(processes_with_arg(marker))

        box = [agent]
        watcher = cancel_when(box, running)
        original = agent.cancel

        def cancel() -> None:
            cancelled_at.append(time.monotonic())
            original()

        agent.cancel = cancel  # type: ignore[method-assign]
        result, ended, _ = timed_run(agent, "sleep a while")
        watcher.join()
    assert result.stop_reason == "cancelled"
    assert ended - cancelled_at[0] < 1.0
    assert processes_gone(marker, 1.0), "the sleep outlived the cancelled turn"
    outcome = result.tool_calls[0]
    assert outcome.error_kind == "cancelled" and "cancelled" in outcome.result
    assert len(llm.requests) == 1  # the model was not asked again
    # the conversation stays valid: the call has its result, and the next run goes on from there
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "tool"]


def test_cancel_returns_while_a_tool_is_stuck_where_nothing_interrupts_it(make_system: MakeSystem) -> None:
    entered = threading.Event()

    def stuck() -> str:
        entered.set()
        time.sleep(5)  # one C call: an interruption lands only when it returns
        return "too late"

    @hookimpl
    def register_tools(registry: Any) -> None:
        registry.register(name="stuck", toolset="testing", handler=stuck, schema={"name": "stuck"})

    plugin = types.SimpleNamespace(register_tools=register_tools)
    with ScriptedLLM([calls(call("stuck")), say("next run")]) as llm:
        system = make_system(models={"test": model_table(llm)}, plugins=(plugin,))
        agent = Agent(system, toolsets=["testing"])
        watcher = cancel_when([agent], entered.is_set)
        result, _, took = timed_run(agent, "get stuck")
        watcher.join()
        assert result.stop_reason == "cancelled" and took < 2.0
        assert "interrupted" in agent.messages[-1]["content"]  # the stuck call got a result of its own
        again = agent.run("go on")
    assert again.ok and again.text == "next run"
    assert [m["role"] for m in llm.requests[1].messages] == ["system", "user", "assistant", "tool", "user"]


def test_cancel_while_the_server_is_silent_returns_at_once(make_system: MakeSystem) -> None:
    with ScriptedLLM([say("late", wait=5.0), say("second")]) as llm:
        system = make_system(models={"test": model_table(llm, timeout=30.0)})
        agent = Agent(system)
        watcher = cancel_when([agent], lambda: len(llm.requests) == 1, delay=0.2)
        result, _, took = timed_run(agent, "hello?")
        watcher.join()
    assert result.stop_reason == "cancelled" and took < 1.5


def test_a_streaming_answer_stops_mid_stream_and_keeps_what_was_shown(make_system: MakeSystem) -> None:
    slow = say("word " * 100, pieces=100, chunk_delay=0.05)
    with ScriptedLLM([slow]) as llm:
        system = make_system(models={"test": model_table(llm)})
        agent = Agent(system)
        shown: list[str] = []

        def on_event(event: AgentEvent) -> None:
            text = getattr(event, "text", "")
            if text:
                shown.append(text)

        agent.on_event = on_event
        watcher = cancel_when([agent], lambda: len(shown) > 3)
        result, _, took = timed_run(agent, "talk")
        watcher.join()
    assert result.stop_reason == "cancelled" and took < 4.0
    assert agent.messages[-1] == {"role": "assistant", "content": "".join(shown)}


def test_cancelling_a_parent_kills_its_sub_agents_commands(make_system: MakeSystem) -> None:
    markers = [sleep_marker() for _ in range(3)]

    def model(request: Request) -> Reply:
        if "You are a sub-agent" in request.system_text():
            goal = request.user_texts()[0]
            marker = next(m for m in markers if m in goal)
            return calls(call("terminal", {"command": f"sleep {marker}", "timeout": 120}))
        if not request.tool_results():
            tasks = [{"goal": f"wait with sleep {m}"} for m in markers]
            return calls(call("delegate_task", {"tasks": tasks}))
        return say("never asked")

    with ScriptedLLM(model) as llm:
        system = make_system(models={"test": model_table(llm)})
        agent = Agent(system)
        watcher = cancel_when([agent], lambda: all(processes_with_arg(m) for m in markers))
        result, _, _ = timed_run(agent, "delegate three waits")
        watcher.join()
        assert result.stop_reason == "cancelled"
        gone_by = time.monotonic()
        assert all(processes_gone(m, 1.0) for m in markers), "a sub-agent's sleep outlived the cancel"
        assert time.monotonic() - gone_by < 1.0
    assert result.tool_calls[0].error_kind == "cancelled"


def test_a_cancelled_approval_is_a_denial_whatever_the_answer(
    make_system: MakeSystem, workspace: Path
) -> None:
    asked = threading.Event()
    answer_now = threading.Event()

    def slow_human(request: ApprovalRequest) -> str:
        asked.set()
        answer_now.wait(10)  # the human answers only after the turn was cancelled
        return "once"

    command = "touch pushed.txt && git push --force origin main"
    script = [calls(call("terminal", {"command": command})), say("never asked")]
    with ScriptedLLM(script) as llm:
        system = make_system(models={"test": model_table(llm)}, approver=CallbackApprover(slow_human))
        agent = Agent(system, toolsets=["terminal"])

        def cancel_then_answer() -> None:
            asked.wait(10)
            agent.cancel()
            answer_now.set()

        thread = threading.Thread(target=cancel_then_answer, daemon=True)
        thread.start()
        result, _, took = timed_run(agent, "push")
        thread.join()
        time.sleep(0.3)  # the approver's late "once" has come back by now
    assert result.stop_reason == "cancelled" and took < 2.0
    assert not (workspace / "pushed.txt").exists()
    assert result.tool_calls[0].status in ("denied", "error")


def test_tool_calls_asked_after_the_cancel_are_not_run(make_system: MakeSystem) -> None:
    ran: list[int] = []

    def note(n: int) -> str:
        ran.append(n)
        return "noted"

    @hookimpl
    def register_tools(registry: Any) -> None:
        registry.register(
            name="note",
            toolset="testing",
            handler=note,
            schema={
                "name": "note",
                "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}},
            },
        )

    box: list[Agent] = []

    def on_event(event: AgentEvent) -> None:
        if isinstance(event, ToolCallStarted):
            box[0].cancel()

    plugin = types.SimpleNamespace(register_tools=register_tools)
    with ScriptedLLM([calls(call("note", {"n": 1}), call("note", {"n": 2}))]) as llm:
        system = make_system(models={"test": model_table(llm)}, plugins=(plugin,))
        agent = Agent(system, toolsets=["testing"], on_event=on_event)
        box.append(agent)
        result = agent.run("note twice")
    assert result.stop_reason == "cancelled" and ran == []
    assert all(json.loads(o.result)["error"].startswith("Not run") for o in result.tool_calls)


def test_cancel_cancels_an_async_tool_where_it_awaits(make_system: MakeSystem) -> None:
    import asyncio

    seen: list[str] = []

    async def wait_long() -> str:
        seen.append("started")
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return "too late"

    @hookimpl
    def register_tools(registry: Any) -> None:
        registry.register(
            name="wait_long", toolset="testing", handler=wait_long, schema={"name": "wait_long"}
        )

    plugin = types.SimpleNamespace(register_tools=register_tools)
    with ScriptedLLM([calls(call("wait_long"))]) as llm:
        system = make_system(models={"test": model_table(llm)}, plugins=(plugin,))
        agent = Agent(system, toolsets=["testing"])
        watcher = cancel_when([agent], lambda: seen == ["started"], delay=0.1)
        result, _, took = timed_run(agent, "wait")
        watcher.join()
    assert result.stop_reason == "cancelled" and took < 2.0
    assert seen == ["started", "cancelled"]  # the coroutine was cancelled where it waited, not left to run
    assert result.tool_calls[0].error_kind == "cancelled"
