"""The agent loop against a scripted model over real HTTP, in every wire format (OpenAI-compatible and Anthropic,
streamed and not): multi-step tool use, parallel calls, malformed calls reported back, approvals, budgets,
cancellation and the conversation staying valid afterwards."""

from __future__ import annotations

import asyncio
import json
import threading
import types
from pathlib import Path
from typing import Any

import pytest
from agent_support import WIRE_IDS, WIRES, MakeSystem, model_table
from scripted_llm import Reply, Request, ScriptedLLM, call, calls, say, status

from hermes_core import ToolError, hookimpl
from hermes_core.agent import (
    Agent,
    AgentEvent,
    AgentFinished,
    ContextTrimmed,
    ModelRetrying,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnStarted,
    run_agent,
)
from hermes_core.security import CallbackApprover

wires = pytest.mark.parametrize(("provider", "stream"), WIRES, ids=WIRE_IDS)


def tool_plugin(**tools: Any) -> object:
    """A plugin registering simple tools: ``name=(handler, parameters, options)``."""

    @hookimpl
    def register_tools(registry: Any) -> None:
        for name, (handler, properties, options) in tools.items():
            registry.register(
                name=name,
                toolset="testing",
                handler=handler,
                schema={
                    "name": name,
                    "description": f"test tool {name}",
                    "parameters": {"type": "object", "properties": properties},
                },
                **options,
            )

    return types.SimpleNamespace(register_tools=register_tools)


@wires
def test_multi_step_tool_use(make_system: MakeSystem, workspace: Path, provider: str, stream: bool) -> None:
    script = [
        calls(
            call("write_file", {"path": "notes.txt", "content": "the answer is 42\n"}),
            text="Writing it down.",
        ),
        calls(call("read_file", {"path": "notes.txt"})),
        say("The file says the answer is 42."),
    ]
    events: list[AgentEvent] = []
    with ScriptedLLM(script) as llm:
        system = make_system(models={"test": model_table(llm, provider, stream)})
        result = Agent(system, on_event=events.append).run("Note the answer, then read it back.")
    assert result.stop_reason == "done" and result.ok, result.error
    assert result.text == "The file says the answer is 42."
    assert result.turns == 3
    assert [(o.name, o.status) for o in result.tool_calls] == [("write_file", "ok"), ("read_file", "ok")]
    assert (workspace / "notes.txt").read_text() == "the answer is 42\n"
    first, second, third = llm.requests
    assert first.stream is stream
    assert "read_file" in first.tool_names() and "write_file" in first.tool_names()
    assert str(workspace) in first.system_text()
    assert first.user_texts() == ["Note the answer, then read it back."]
    assert "42" in second.tool_results()[0] or "notes.txt" in second.tool_results()[0]
    assert "the answer is 42" in third.tool_results()[0]
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0
    streamed = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert streamed == "Writing it down.The file says the answer is 42."
    assert [e.turn for e in events if isinstance(e, TurnStarted)] == [1, 2, 3]
    started = [e.name for e in events if isinstance(e, ToolCallStarted)]
    finished = [e.outcome.status for e in events if isinstance(e, ToolCallFinished)]
    assert started == ["write_file", "read_file"] and finished == ["ok", "ok"]
    assert isinstance(events[-1], AgentFinished) and events[-1].result is result


@wires
def test_parallel_tool_calls_run_together_and_come_back_in_order(
    make_system: MakeSystem, provider: str, stream: bool
) -> None:
    barrier = threading.Barrier(3, timeout=10)

    def meet(tag: str) -> str:
        barrier.wait()  # only returns once all three calls run at the same time
        return f"met {tag}"

    plugin = tool_plugin(meet=(meet, {"tag": {"type": "string"}}, {"parallel_safe": True}))
    script = [
        calls(
            call("meet", {"tag": "a"}, "id_a"),
            call("meet", {"tag": "b"}, "id_b"),
            call("meet", {"tag": "c"}, "id_c"),
        ),
        say("all three met"),
    ]
    with ScriptedLLM(script) as llm:
        system = make_system(models={"test": model_table(llm, provider, stream)}, plugins=(plugin,))
        result = run_agent(system, "meet up")
    assert result.ok and [o.result for o in result.tool_calls] == ["met a", "met b", "met c"]
    assert llm.requests[1].tool_results() == ["met a", "met b", "met c"]
    sent = llm.requests[1].messages
    if provider == "anthropic":
        ids = [b["tool_use_id"] for b in sent[-1]["content"]]
    else:
        ids = [m["tool_call_id"] for m in sent if m["role"] == "tool"]
    assert ids == ["id_a", "id_b", "id_c"]


@pytest.mark.parametrize(("provider", "stream"), WIRES[:3], ids=WIRE_IDS[:3])
def test_malformed_calls_are_repaired_or_reported_back_to_the_model(
    make_system: MakeSystem, workspace: Path, provider: str, stream: bool
) -> None:
    (workspace / "a.txt").write_text("alpha\n")

    def model(request: Request) -> Reply:
        if len(llm.requests) == 1:
            return calls(
                call("read_file", "{'path': 'a.txt',}"),  # Python quotes and a trailing comma: repaired
                call("read_file", '{"path": "a.txt"'),  # cut off: reported
                call("raed_file", {"path": "a.txt"}),  # no such tool: reported with a suggestion
            )
        if len(llm.requests) == 2:
            repaired, truncated, unknown = request.tool_results()
            assert "alpha" in repaired
            assert "truncated" in truncated
            assert "Unknown tool 'raed_file'" in unknown and "read_file" in unknown
            return calls(call("read_file", {"path": "a.txt"}))
        return say("read it after fixing my calls")

    with ScriptedLLM(model) as llm:
        system = make_system(models={"test": model_table(llm, provider, stream)})
        result = run_agent(system, "read a.txt")
    assert result.ok, result
    kinds = [(o.status, o.error_kind) for o in result.tool_calls]
    assert kinds == [("ok", None), ("error", "invalid_arguments"), ("error", "unknown_tool"), ("ok", None)]
    assert len(llm.requests) == 3


@wires
def test_a_tool_needing_approval_is_denied_headless_and_the_model_is_told(
    make_system: MakeSystem, workspace: Path, provider: str, stream: bool
) -> None:
    script = [
        calls(call("write_file", {"path": "x.txt", "content": "x"})),
        say("I was not allowed to write."),
    ]
    with ScriptedLLM(script) as llm:
        system = make_system(
            models={"test": model_table(llm, provider, stream)},
            config={"approvals": {"tools": ["write_file"]}},
        )
        result = run_agent(system, "write x.txt")
    assert result.ok and result.tool_calls[0].status == "denied"
    assert "Denied" in llm.requests[1].tool_results()[0]
    assert not (workspace / "x.txt").exists()


def test_approvals_go_through_the_systems_approver(make_system: MakeSystem, workspace: Path) -> None:
    asked: list[str] = []

    def approve(request: Any) -> str:
        asked.append(request.subject)
        return "once"

    script = [calls(call("write_file", {"path": "x.txt", "content": "x"})), say("written")]
    with ScriptedLLM(script) as llm:
        system = make_system(
            models={"test": model_table(llm)},
            config={"approvals": {"tools": ["write_file"]}},
            approver=CallbackApprover(approve),
        )
        result = run_agent(system, "write x.txt")
    assert result.ok and result.tool_calls[0].status == "ok"
    assert len(asked) == 1 and asked[0].startswith("write_file ")
    assert (workspace / "x.txt").read_text() == "x"


def test_the_turn_budget_ends_a_run_and_leaves_a_valid_conversation(make_system: MakeSystem) -> None:
    plugin = tool_plugin(ping=(lambda: "pong", {}, {}))
    with ScriptedLLM(lambda request: calls(call("ping"))) as llm:
        system = make_system(models={"test": model_table(llm)}, plugins=(plugin,))
        agent = Agent(system, max_turns=2)
        result = agent.run("ping forever")
    assert result.stop_reason == "max_turns" and not result.ok
    assert result.turns == 2 and len(llm.requests) == 2
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "tool", "assistant", "tool"]


def test_definitions_are_asked_for_every_turn(make_system: MakeSystem) -> None:
    switch = {"on": True}
    plugin = tool_plugin(
        lamp=(lambda: "lit", {}, {"check_fn": lambda: switch["on"]}),
        switch_off=(lambda: switch.update(on=False) or "off", {}, {}),
    )
    script = [calls(call("switch_off")), calls(call("lamp")), say("the lamp is gone")]
    with ScriptedLLM(script) as llm:
        system = make_system(
            models={"test": model_table(llm)}, plugins=(plugin,), config={"tools": {"check_ttl": 0}}
        )
        result = Agent(system, toolsets=["testing"]).run("switch off")
    assert llm.requests[0].tool_names() == ["lamp", "switch_off"]
    assert llm.requests[1].tool_names() == ["switch_off"]
    assert result.tool_calls[1].status == "error" and "not available" in result.tool_calls[1].result


def test_allowed_tools_narrow_what_the_model_sees_and_runs(make_system: MakeSystem, workspace: Path) -> None:
    (workspace / "a.txt").write_text("a")
    script = [calls(call("write_file", {"path": "b.txt", "content": "b"})), say("could not")]
    with ScriptedLLM(script) as llm:
        system = make_system(models={"test": model_table(llm)})
        result = Agent(system, allowed_tools={"read_file", "search_files"}).run("write b")
    assert llm.requests[0].tool_names() == ["read_file", "search_files"]
    assert result.tool_calls[0].error_kind == "unknown_tool" and "not enabled" in result.tool_calls[0].result
    assert not (workspace / "b.txt").exists()


def test_a_rate_limited_request_is_retried(make_system: MakeSystem) -> None:
    events: list[AgentEvent] = []
    script = [status(429, "slow down", {"retry-after": "0"}), say("fine now")]
    with ScriptedLLM(script) as llm:
        system = make_system(models={"test": model_table(llm)})
        result = Agent(system, on_event=events.append).run("hello")
    assert result.ok and result.text == "fine now" and len(llm.requests) == 2
    retries = [e for e in events if isinstance(e, ModelRetrying)]
    assert len(retries) == 1 and retries[0].attempt == 1 and retries[0].delay == 0
    assert "HTTP 429" in retries[0].reason and "slow down" in retries[0].reason


def test_a_model_that_keeps_failing_ends_the_run_with_an_error(make_system: MakeSystem) -> None:
    with ScriptedLLM(lambda request: status(503, "down for maintenance", {"retry-after": "0"})) as llm:
        system = make_system(models={"test": model_table(llm, max_retries=2)})
        agent = Agent(system)
        result = agent.run("hello")
    assert result.stop_reason == "error" and "HTTP 503" in (result.error or "")
    assert len(llm.requests) == 3
    assert agent.messages == [{"role": "user", "content": "hello"}]


def test_a_context_length_error_trims_harder_and_tries_again(make_system: MakeSystem) -> None:
    plugin = tool_plugin(dump=(lambda: "x" * 20_000, {}, {}))
    script = [
        calls(call("dump")),
        calls(call("dump")),
        status(400, "This model's maximum context length is 8192 tokens"),
        say("done"),
    ]
    with ScriptedLLM(script) as llm:
        system = make_system(models={"test": model_table(llm)}, plugins=(plugin,))
        result = Agent(system).run("dump twice")
    assert result.ok and len(llm.requests) == 4
    before, after = json.dumps(llm.requests[2].messages), json.dumps(llm.requests[3].messages)
    assert len(after) < len(before) and "trimmed" in after


def test_the_context_budget_trims_old_tool_results(make_system: MakeSystem) -> None:
    big = "line of output\n" * 400  # ~6,000 characters per result
    plugin = tool_plugin(dump=(lambda n: f"dump {n}\n{big}", {"n": {"type": "integer"}}, {}))
    script = [calls(call("dump", {"n": n})) for n in range(1, 5)] + [say("done")]
    events: list[AgentEvent] = []
    with ScriptedLLM(script) as llm:
        system = make_system(models={"test": model_table(llm)}, plugins=(plugin,))
        result = Agent(system, context_chars=16_000, toolsets=["testing"], on_event=events.append).run("dump")
    assert result.ok
    last = llm.requests[-1].messages
    tool_texts = [m["content"] for m in last if m["role"] == "tool"]
    assert tool_texts[-1].startswith("dump 4") and "trimmed" not in tool_texts[-1]  # the newest stays whole
    assert any("trimmed to fit the context window" in t for t in tool_texts[:-1])
    assert sum(len(json.dumps(m)) for m in last) < 20_000
    assert any(isinstance(e, ContextTrimmed) for e in events)


def test_cancel_stops_a_streaming_turn_and_the_conversation_goes_on(make_system: MakeSystem) -> None:
    slow = say("word " * 60, pieces=60, chunk_delay=0.05)
    script = [slow, say("second answer")]
    agent_box: list[Agent] = []

    def on_event(event: AgentEvent) -> None:
        if isinstance(event, TextDelta) and event.text.strip():
            agent_box[0].cancel()

    with ScriptedLLM(script) as llm:
        system = make_system(models={"test": model_table(llm)})
        agent = Agent(system, on_event=on_event)
        agent_box.append(agent)
        result = agent.run("talk")
        assert result.stop_reason == "cancelled"
        assert 0 < len(result.text) < len("word " * 60)
        agent.on_event = None
        again = agent.run("go on")
    assert again.ok and again.text == "second answer"
    assert [m["role"] for m in llm.requests[1].messages] == ["system", "user", "assistant", "user"]


def test_a_keyboard_interrupt_in_a_tool_leaves_the_conversation_valid(make_system: MakeSystem) -> None:
    def interrupt() -> str:
        raise KeyboardInterrupt

    plugin = tool_plugin(interrupt=(interrupt, {}, {}))
    script = [calls(call("interrupt")), say("after the interruption")]
    with ScriptedLLM(script) as llm:
        system = make_system(models={"test": model_table(llm)}, plugins=(plugin,))
        agent = Agent(system)
        with pytest.raises(KeyboardInterrupt):
            agent.run("go")
        assert [m["role"] for m in agent.messages] == ["user", "assistant", "tool"]
        assert "interrupted" in agent.messages[-1]["content"]
        result = agent.run("again")
    assert result.ok and "interrupted" in llm.requests[1].messages[3]["content"]


def test_repeated_tool_call_ids_from_a_server_are_made_unique(make_system: MakeSystem) -> None:
    plugin = tool_plugin(ping=(lambda: "pong", {}, {}))
    script = [calls(call("ping", {}, "call_0")), calls(call("ping", {}, "call_0")), say("done")]
    with ScriptedLLM(script) as llm:
        system = make_system(models={"test": model_table(llm)}, plugins=(plugin,))
        result = run_agent(system, "ping twice")
    assert result.ok
    ids = [m["tool_call_id"] for m in llm.requests[2].messages if m["role"] == "tool"]
    assert len(ids) == 2 and len(set(ids)) == 2


def test_a_broken_event_callback_does_not_break_the_run(make_system: MakeSystem) -> None:
    def broken(event: AgentEvent) -> None:
        raise RuntimeError("ui crashed")

    with ScriptedLLM([say("fine")]) as llm:
        system = make_system(models={"test": model_table(llm)})
        assert Agent(system, on_event=broken).run("hi").text == "fine"


def test_arun_and_cancelling_the_awaiting_task(make_system: MakeSystem) -> None:
    slow = say("tick " * 200, pieces=200, chunk_delay=0.02)
    with ScriptedLLM([say("async hello"), slow]) as llm:
        system = make_system(models={"test": model_table(llm)})
        agent = Agent(system)

        async def main() -> None:
            result = await agent.arun("hi")
            assert result.text == "async hello"
            task = asyncio.create_task(agent.arun("talk slowly"))
            await asyncio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(main())
    assert agent.messages[-1]["role"] == "assistant"
    assert 0 < len(agent.messages[-1]["content"]) < len("tick " * 200)


def test_a_tool_error_reaches_the_model_unchanged(make_system: MakeSystem) -> None:
    def fail() -> str:
        raise ToolError("the disk is full; write less")

    plugin = tool_plugin(fail=(fail, {}, {}))
    with ScriptedLLM([calls(call("fail")), say("ok")]) as llm:
        system = make_system(models={"test": model_table(llm)}, plugins=(plugin,))
        run_agent(system, "go")
    assert json.loads(llm.requests[1].tool_results()[0]) == {"error": "the disk is full; write less"}
