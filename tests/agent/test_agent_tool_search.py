"""Tool search in the agent loop, against a scripted model over real HTTP.

The catalog's MCP tools (real definitions from PyPI and npm servers) are registered next to the built-ins, far
past the definitions budget: the model sees the core tools and ``tool_search``, searches, finds the tool in the
next request's tools, calls it, and the call runs through the whole pipeline. With the Anthropic wire format the
request carries Anthropic's own deferral (``defer_loading`` and its tool search tool), validated strictly with the
``anthropic`` SDK's request types.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from agent_support import MakeSystem, model_table
from scripted_llm import ScriptedLLM, call, calls, say

from hermes_core import hookimpl
from hermes_core.agent import Agent
from hermes_core.selection import SEARCH_TOOL, estimate_tokens

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks" / "catalog"))
from catalog import CatalogPlugin, load_tools

MCP_TOOLS = [t for t in load_tools() if t["source"]["registry"] != "builtin"]
BUDGET = 4_000


class Recorder:
    """A policy plugin that sees every call the pipeline runs (so a call that skipped the pipeline would show)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    @hookimpl
    def pre_tool_call(self, name: str, arguments: dict[str, Any]) -> None:
        self.calls.append((name, dict(arguments)))


def tool_names(body: dict[str, Any], *, deferred: bool = False) -> set[str]:
    out = set()
    for tool in body.get("tools") or ():
        if bool(tool.get("defer_loading")) != deferred:
            continue
        fn = tool.get("function")
        out.add(fn["name"] if isinstance(fn, dict) else tool["name"])
    return out


def sent_tokens(body: dict[str, Any]) -> int:
    return sum(estimate_tokens(t) for t in body.get("tools") or () if not t.get("defer_loading"))


def validate_anthropic_request(body: dict[str, Any]) -> None:
    """Strict validation with the SDK's request types, plus no key a tool type does not declare."""
    from anthropic.types import ToolParam, ToolSearchToolBm25_20251119Param
    from anthropic.types.message_create_params import (
        MessageCreateParamsNonStreaming,
        MessageCreateParamsStreaming,
    )
    from pydantic import TypeAdapter

    params = MessageCreateParamsStreaming if body.get("stream") else MessageCreateParamsNonStreaming
    checked = TypeAdapter(params).validate_python(body, strict=True)
    tools = list(checked.get("tools") or ())  # iterable fields are validated as they are read
    messages = list(checked["messages"])
    assert tools and messages
    for tool in body["tools"]:
        kind = ToolSearchToolBm25_20251119Param if "bm25" in str(tool.get("type", "")) else ToolParam
        assert set(tool) <= set(kind.__annotations__), (
            tool.get("name"),
            set(tool) - set(kind.__annotations__),
        )
    deferred = [t for t in body["tools"] if t.get("defer_loading")]
    if deferred:  # Anthropic's rules: a search tool comes with deferred tools, and not everything is deferred
        assert any(str(t.get("type", "")).startswith("tool_search_tool") for t in body["tools"])
        assert len(deferred) < len(body["tools"])


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


def make(make_system: MakeSystem, llm: ScriptedLLM, provider: str, recorder: Recorder) -> Any:
    return make_system(
        models={"test": model_table(llm, provider, stream=False)},
        config={"tools": {"search_budget": BUDGET}},
        plugins=(CatalogPlugin(MCP_TOOLS, with_search=False), recorder),
    )


def test_the_model_searches_then_calls_the_tool_it_found(make_system: MakeSystem, recorder: Recorder) -> None:
    script = [
        calls(call(SEARCH_TOOL, {"query": "kubectl get pods", "limit": 3})),
        calls(call("kubectl_get", {"resourceType": "pods", "namespace": "staging"})),
        say("Three pods are running."),
    ]
    with ScriptedLLM(script) as llm:
        system = make(make_system, llm, "openai", recorder)
        agent = Agent(system, model="test")
        result = agent.run("which pods are running in staging?")
        assert result.stop_reason == "done", result.error
        first, second, third = llm.requests
    assert SEARCH_TOOL in tool_names(first.body) and "kubectl_get" not in tool_names(first.body)
    assert sent_tokens(first.body) <= BUDGET
    found = json.loads(second.tool_results()[0])
    assert "kubectl_get" in [t["name"] for t in found["tools"]]
    assert "kubectl_get" in tool_names(second.body)  # the found tool is offered on the next turn...
    assert sent_tokens(second.body) <= BUDGET
    assert "kubectl_get" in tool_names(third.body)  # ...and the turns after
    assert [name for name, _ in recorder.calls] == [SEARCH_TOOL, "kubectl_get"]  # both through the pipeline
    assert json.loads(third.tool_results()[0]) == {"echo": {"namespace": "staging", "resourceType": "pods"}}
    loaded = system.loaded_tools(agent.session_id)
    assert loaded.searches == 1 and loaded.direct_calls == 0


def test_another_agent_session_does_not_see_what_one_loaded(
    make_system: MakeSystem, recorder: Recorder
) -> None:
    script = [calls(call(SEARCH_TOOL, {"query": "select:kubectl_get"})), say("ok"), say("ok")]
    with ScriptedLLM(script) as llm:
        system = make(make_system, llm, "openai", recorder)
        Agent(system, model="test").run("load it")
        Agent(system, model="test").run("and you?")
        other = llm.requests[2]
    assert "kubectl_get" not in tool_names(other.body) and SEARCH_TOOL in tool_names(other.body)


def test_anthropic_requests_use_native_deferral_and_pass_strict_validation(
    make_system: MakeSystem, recorder: Recorder
) -> None:
    # Anthropic's server-side search finds the deferred tool; the model then calls it by its exact name
    script = [
        calls(call("slack_post_message", {"channel_id": "C1", "text": "deployed"})),
        say("Posted."),
    ]
    with ScriptedLLM(script) as llm:
        system = make(make_system, llm, "anthropic", recorder)
        agent = Agent(system, model="test")
        result = agent.run("tell the team on slack that we deployed")
        assert result.stop_reason == "done", result.error
        first, second = llm.requests
    for request in (first, second):
        validate_anthropic_request(request.body)
        assert sent_tokens(request.body) <= BUDGET
    assert "slack_post_message" in tool_names(first.body, deferred=True)
    assert {"tool_search_tool_bm25", "read_file"} <= tool_names(first.body)
    assert {t["name"] for t in MCP_TOOLS} <= tool_names(first.body, deferred=True)  # searchable server-side
    assert "slack_post_message" in tool_names(second.body)  # called, so loaded: sent in full now
    assert "slack_post_message" not in tool_names(second.body, deferred=True)
    assert recorder.calls == [("slack_post_message", {"channel_id": "C1", "text": "deployed"})]
    assert system.loaded_tools(agent.session_id).direct_calls == 1
