"""delegate_task's description, schema and limits come from ``[plugins.agents]`` (through
``dynamic_schema_overrides``), and the handler enforces what the model was told."""

from __future__ import annotations

import threading
from typing import Any

from agent_support import MakeSystem, model_table
from scripted_llm import Reply, Request, ScriptedLLM, call, calls, say

from hermes_core.agent import run_agent

UNUSED = {"base_url": "http://127.0.0.1:9/v1", "model": "m"}


def _schema(system: Any) -> dict[str, Any]:
    return next(d for d in system.definitions() if d["function"]["name"] == "delegate_task")["function"]


def test_the_schema_follows_the_config(make_system: MakeSystem) -> None:
    default = _schema(make_system(models={"m": UNUSED}))
    assert "3 run at a time" in default["description"] and "delegate" not in default["description"]
    assert default["parameters"]["properties"]["tasks"]["maxItems"] == 6
    agents = {"max_concurrency": 5, "max_tasks": 12, "subagent_max_turns": 30, "max_depth": 2}
    tuned = _schema(make_system(models={"m": UNUSED}, config={"plugins": {"agents": agents}}))
    assert "5 run at a time" in tuned["description"]
    assert "may delegate in turn" in tuned["description"] and "3 run at a time" not in str(tuned)
    props = tuned["parameters"]["properties"]
    assert props["tasks"]["maxItems"] == 12
    assert "(default 30)" in props["max_turns"]["description"]


def test_the_handler_enforces_the_configured_limits(make_system: MakeSystem) -> None:
    lock = threading.Lock()
    state = {"in_flight": 0, "peak": 0}
    barrier = threading.Barrier(2, timeout=10)

    def model(request: Request) -> Reply:
        if "You are a sub-agent" not in request.system_text():
            if request.tool_results():
                return say("done")
            return calls(call("delegate_task", {"tasks": [{"goal": f"task {n}"} for n in range(1, 5)]}))
        with lock:
            state["in_flight"] += 1
            state["peak"] = max(state["peak"], state["in_flight"])
        try:
            barrier.wait()  # two at a time must be running together to get past this
            return say("finished")
        finally:
            with lock:
                state["in_flight"] -= 1

    with ScriptedLLM(model) as llm:
        agents = {"max_concurrency": 2, "max_tasks": 4}
        system = make_system(models={"test": model_table(llm)}, config={"plugins": {"agents": agents}})
        result = run_agent(system, "do four things")
        assert result.ok and result.tool_calls[0].result.count("finished") == 4
        assert state["peak"] == 2
        five = [{"goal": f"t{n}"} for n in range(5)]
        outcome = system.call_outcome("delegate_task", {"tasks": five})
    assert outcome.status == "error" and "more than the 4 one call may hand out" in outcome.result
