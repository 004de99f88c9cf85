"""The loop against the providers as they really answer: Anthropic extended thinking across tool turns, streamed
usage, context overflow in each server's own words (the real error bodies), streams that fail before their
first token, and refusals and truncations as end states of their own. Every request passes strict validation
against the SDKs' parameter types (the scripted server refuses any other, as the APIs do)."""

from __future__ import annotations

import json
import types
from typing import Any

import pytest
from agent_support import WIRE_IDS, WIRES, MakeSystem, model_table
from scripted_llm import Reply, ScriptedLLM, call, calls, say, status

from hermes_core import hookimpl
from hermes_core.agent import Agent
from hermes_core.models import ModelError, get_model

THINKING = {"thinking": {"type": "enabled", "budget_tokens": 2048}}


def tool_plugin(**handlers: Any) -> object:
    @hookimpl
    def register_tools(registry: Any) -> None:
        for name, handler in handlers.items():
            registry.register(
                name=name,
                toolset="testing",
                handler=handler,
                schema={"name": name, "parameters": {"type": "object", "properties": {}}},
            )

    return types.SimpleNamespace(register_tools=register_tools)


# -- Anthropic extended thinking ------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "json"])
def test_thinking_blocks_go_back_unchanged_across_tool_turns(make_system: MakeSystem, stream: bool) -> None:
    plugin = tool_plugin(lookup=lambda: "42", check=lambda: "ok")
    script = [
        calls(call("lookup"), thinking=("I should look it up first.",), redacted=("EncryptedBlob==",)),
        calls(call("check"), text="Found it; checking.", thinking=("Now verify it.",)),
        say("The answer is 42.", thinking=("Both agree.",)),
    ]
    with ScriptedLLM(script) as llm:
        table = model_table(llm, "anthropic", stream, params=THINKING)
        system = make_system(models={"test": table}, plugins=(plugin,))
        result = Agent(system, toolsets=["testing"]).run("what is it?")
    assert result.ok and result.text == "The answer is 42."
    assert llm.invalid == []  # the server enforces the API's rule: a tool-use turn starts with its thinking
    second, third = llm.requests[1].messages, llm.requests[2].messages
    first_turn = second[1]["content"]
    assert [b["type"] for b in first_turn] == ["thinking", "redacted_thinking", "tool_use"]
    assert first_turn[0]["thinking"] == "I should look it up first."
    assert llm.signatures[first_turn[0]["signature"]] == "I should look it up first."
    assert first_turn[1] == {"type": "redacted_thinking", "data": "EncryptedBlob=="}
    assert [b["type"] for b in third[3]["content"]] == ["thinking", "text", "tool_use"]
    assert third[1]["content"] == first_turn  # the earlier turn is sent again, unchanged


def test_the_scripted_server_refuses_a_tool_turn_without_its_thinking(make_system: MakeSystem) -> None:
    """The check the test above relies on: without the blocks (what the client did before), the API refuses."""
    with ScriptedLLM([say("unused")], expect_valid=False) as llm:
        client = get_model(make_system(models={"test": model_table(llm, "anthropic", params=THINKING)}))
        messages = [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "toolu_1", "type": "function", "function": {"name": "x", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "toolu_1", "content": "done"},
        ]
        with pytest.raises(ModelError) as err:
            client.complete(messages)
    assert (
        err.value.status == 400
        and "Expected `thinking` or `redacted_thinking`, but found `tool_use`" in str(err.value)
    )


# -- usage ----------------------------------------------------------------------------------------------------


def test_streamed_openai_usage_is_asked_for_and_summed_per_run(make_system: MakeSystem) -> None:
    plugin = tool_plugin(ping=lambda: "pong")
    script = [calls(call("ping"), usage=(120, 30)), say("done", usage=(160, 9))]
    with ScriptedLLM(script) as llm:
        system = make_system(models={"test": model_table(llm, "openai", True)}, plugins=(plugin,))
        result = Agent(system, toolsets=["testing"]).run("ping")
    assert llm.requests[0].body["stream_options"] == {"include_usage": True}
    assert (result.usage.input_tokens, result.usage.output_tokens) == (280, 39)


def test_stream_usage_off_for_servers_that_refuse_it(make_system: MakeSystem) -> None:
    with ScriptedLLM([say("fine")]) as llm:
        system = make_system(models={"test": model_table(llm, stream_usage=False)})
        result = Agent(system).run("hi")
    assert "stream_options" not in llm.requests[0].body and result.usage.input_tokens == 0


def test_a_server_that_rejects_stream_options_is_asked_again_without(make_system: MakeSystem) -> None:
    refused = status(400, "Unrecognized request argument supplied: stream_options")
    with ScriptedLLM([refused, say("fine"), say("again")]) as llm:
        system = make_system(models={"test": model_table(llm)})
        agent = Agent(system)
        assert agent.run("hi").text == "fine"
        assert agent.run("more").text == "again"
    assert ["stream_options" in r.body for r in llm.requests] == [True, False, False]


# -- context overflow, in each server's own words -------------------------------------------------------------

OPENAI = {
    "openai-code-only": (
        400,
        {
            "error": {
                "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
                "type": "invalid_request_error",
                "param": "input",
                "code": "context_length_exceeded",
            }
        },
    ),
    "openai-classic": (
        400,
        {
            "error": {
                "message": "This model's maximum context length is 128000 tokens. However, your messages resulted "
                "in 131072 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    ),
    "llama.cpp": (
        400,
        {
            "error": {
                "code": 400,
                "message": "request (9216 tokens) exceeds the available context size (8192 tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 9216,
                "n_ctx": 8192,
            }
        },
    ),
    "llama.cpp-older": (
        400,
        {
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
            }
        },
    ),
    "vllm": (
        400,
        {
            "object": "error",
            "message": "This model's maximum context length is 4096 tokens. However, you requested 4623 tokens "
            "(3599 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    "vllm-max-tokens": (
        400,
        {
            "error": {
                "message": "'max_tokens' or 'max_completion_tokens' is too large: 1024. This model's maximum context "
                "length is 4096 tokens and your request has 3500 input tokens (1024 > 4096 - 3500).",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            }
        },
    ),
    "ollama": (
        400,
        {
            "error": {
                "message": "the input length exceeds the context length",
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            }
        },
    ),
    "ollama-500": (
        500,
        {
            "error": {
                "message": "the input length exceeds the context length",
                "type": "api_error",
                "param": None,
                "code": None,
            }
        },
    ),
}
ANTHROPIC = {
    "anthropic-413": (
        413,
        {
            "type": "error",
            "error": {
                "type": "request_too_large",
                "message": "Request exceeds the maximum allowed number of bytes.",
            },
            "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
        },
    ),
    "anthropic-prompt-too-long": (
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "prompt is too long: 215034 tokens > 200000 maximum",
            },
            "request_id": "req_011CSHoEeqs5C35K2UUqR7Fz",
        },
    ),
    "anthropic-context-limit": (
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "input length and `max_tokens` exceed context limit: 197680 + 8192 > 200000, decrease "
                "input length or `max_tokens` and try again",
            },
        },
    ),
}


@pytest.mark.parametrize(
    ("provider", "code", "body"),
    [("openai", *v) for v in OPENAI.values()] + [("anthropic", *v) for v in ANTHROPIC.values()],
    ids=[*OPENAI, *ANTHROPIC],
)
def test_each_overflow_body_trims_the_conversation_and_the_run_recovers(
    make_system: MakeSystem, provider: str, code: int, body: dict[str, Any]
) -> None:
    plugin = tool_plugin(dump=lambda: "x" * 20_000)
    script = [calls(call("dump")), calls(call("dump")), status(code, body=body), say("done")]
    with ScriptedLLM(script) as llm:
        system = make_system(models={"test": model_table(llm, provider)}, plugins=(plugin,))
        result = Agent(system, toolsets=["testing"]).run("dump twice")
    assert result.ok, result.error
    assert len(llm.requests) == 4  # no retry of the same request: trimmed, then asked again
    before, after = json.dumps(llm.requests[2].messages), json.dumps(llm.requests[3].messages)
    assert len(after) < len(before) - 10_000 and "trimmed" in after


def test_an_ordinary_bad_request_is_not_taken_for_an_overflow(make_system: MakeSystem) -> None:
    body = {
        "error": {
            "message": "Invalid value for 'temperature': must be between 0 and 2.",
            "type": "invalid_request_error",
            "param": "temperature",
            "code": "invalid_value",
        }
    }
    with ScriptedLLM([status(400, body=body)], expect_valid=False) as llm:
        system = make_system(models={"test": model_table(llm)})
        result = Agent(system).run("hi")
    assert result.stop_reason == "error" and "temperature" in (result.error or "") and len(llm.requests) == 1


# -- streams that fail ----------------------------------------------------------------------------------------

OPENAI_STREAM_ERROR = {"error": {"message": "upstream connect error", "type": "server_error", "code": None}}
ANTHROPIC_OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_stream_that_errors_before_its_first_token_is_retried(
    make_system: MakeSystem, provider: str
) -> None:
    error = OPENAI_STREAM_ERROR if provider == "openai" else ANTHROPIC_OVERLOADED
    broken = say("never shown", error_at=1, stream_error=error)
    with ScriptedLLM([broken, say("second try")]) as llm:
        system = make_system(models={"test": model_table(llm, provider)})
        shown: list[str] = []
        result = Agent(system, on_event=lambda e: shown.append(getattr(e, "text", ""))).run("hi")
    assert result.ok and result.text == "second try" and len(llm.requests) == 2
    assert "never" not in "".join(shown)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_stream_cut_before_its_first_token_is_retried(make_system: MakeSystem, provider: str) -> None:
    with ScriptedLLM([say("never shown", cut_at=1), say("second try")]) as llm:
        system = make_system(models={"test": model_table(llm, provider)})
        result = Agent(system).run("hi")
    assert result.ok and result.text == "second try" and len(llm.requests) == 2


def test_a_stream_cut_after_text_was_shown_ends_as_an_error_and_keeps_the_text(
    make_system: MakeSystem,
) -> None:
    with ScriptedLLM([say("one two three four", pieces=4, cut_at=3)]) as llm:
        system = make_system(models={"test": model_table(llm)})
        agent = Agent(system)
        result = agent.run("count")
    assert result.stop_reason == "error" and "before the answer was complete" in (result.error or "")
    assert len(llm.requests) == 1  # not retried: the user saw part of it
    assert agent.messages[-1]["role"] == "assistant" and agent.messages[-1]["content"] == result.text != ""


# -- refusals and truncations ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("provider", "stream"), WIRES, ids=WIRE_IDS)
def test_a_refusal_is_its_own_end(make_system: MakeSystem, provider: str, stream: bool) -> None:
    if provider == "openai":
        reply = Reply(refusal="I can't help with that.")
    else:
        reply = say("I can't help with that.", refusal="yes")
    with ScriptedLLM([reply, say("fine")]) as llm:
        system = make_system(models={"test": model_table(llm, provider, stream)})
        agent = Agent(system)
        result = agent.run("something bad")
        assert result.stop_reason == "refusal" and not result.ok
        assert result.text == "I can't help with that." and "declined" in (result.error or "")
        assert agent.run("something else").ok  # the conversation goes on


@pytest.mark.parametrize(("provider", "stream"), WIRES, ids=WIRE_IDS)
def test_the_output_limit_is_its_own_end_and_calls_cut_with_it_never_run(
    make_system: MakeSystem, provider: str, stream: bool
) -> None:
    ran: list[bool] = []
    plugin = tool_plugin(act=lambda: ran.append(True) or "acted")
    cut = calls(call("act"), text="Let me", stop="length")
    with ScriptedLLM([cut]) as llm:
        system = make_system(models={"test": model_table(llm, provider, stream)}, plugins=(plugin,))
        agent = Agent(system, toolsets=["testing"])
        result = agent.run("act")
    assert result.stop_reason == "length" and "output limit" in (result.error or "") and ran == []
    assert "tool_calls" not in agent.messages[-1]  # the conversation holds no call without a result


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "json"])
def test_openai_content_filter_is_its_own_end(make_system: MakeSystem, stream: bool) -> None:
    with ScriptedLLM([say("Partial", stop="content_filter")]) as llm:
        system = make_system(models={"test": model_table(llm, "openai", stream)})
        result = Agent(system).run("x")
    assert result.stop_reason == "content_filter" and "content filter" in (result.error or "")


def test_anthropic_context_window_stop_is_a_truncation(make_system: MakeSystem) -> None:
    with ScriptedLLM([say("cut", stop="model_context_window_exceeded")]) as llm:
        system = make_system(models={"test": model_table(llm, "anthropic")})
        result = Agent(system).run("x")
    assert result.stop_reason == "length"


# -- reasoning of OpenAI-compatible servers -------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "json"])
def test_reasoning_goes_back_within_the_task_and_not_after_it(make_system: MakeSystem, stream: bool) -> None:
    plugin = tool_plugin(ping=lambda: "pong")
    script = [calls(call("ping"), reasoning="Ping first."), say("done", reasoning="Answer."), say("next")]
    # reasoning_content is no part of OpenAI's own types: this is a DeepSeek/llama.cpp-like server
    with ScriptedLLM(script, strict=False) as llm:
        system = make_system(models={"test": model_table(llm, "openai", stream)}, plugins=(plugin,))
        agent = Agent(system, toolsets=["testing"])
        agent.run("ping")
        agent.run("and now?")
    in_loop = [m for m in llm.requests[1].messages if m["role"] == "assistant"]
    assert in_loop[0]["reasoning_content"] == "Ping first."
    later = [m for m in llm.requests[2].messages if m["role"] == "assistant"]
    assert all("reasoning_content" not in m for m in later)
