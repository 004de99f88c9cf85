"""The agent's hooks, called through the system's hook runner: ``on_agent_message`` (wrappers included) and
``agent_context``, with which the built-ins give every agent the memory store and an index of the skills."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

from agent_support import MakeSystem, model_table
from scripted_llm import ScriptedLLM, call, calls, say

from hermes_core import hookimpl
from hermes_core.agent import Agent


def test_a_wrapper_on_agent_message_runs_around_the_plain_ones(make_system: MakeSystem) -> None:
    seen: list[str] = []

    @hookimpl(wrapper=True)
    def on_agent_message(session_id: str, message: dict[str, Any]) -> Any:
        seen.append(f"before {message['role']}")
        result = yield
        seen.append(f"after {message['role']} ({len(result)} answers)")
        return result

    @hookimpl
    def plain_on_agent_message(message: dict[str, Any]) -> str:
        seen.append(f"plain {message['role']}")
        return "recorded"

    wrapper, plain = types.ModuleType("wrapping_recorder"), types.ModuleType("plain_recorder")
    wrapper.on_agent_message = on_agent_message  # type: ignore[attr-defined]
    plain.on_agent_message = plain_on_agent_message  # type: ignore[attr-defined]
    with ScriptedLLM([say("hello")]) as llm:
        system = make_system(models={"test": model_table(llm)}, plugins=(wrapper, plain))
        Agent(system).run("hi")
    # the wrapper sees the answers of the plain implementations (the built-ins' recorder answers None)
    assert seen[:3] == ["before user", "plain user", "after user (1 answers)"]
    assert "before assistant" in seen and "after assistant (1 answers)" in seen


def test_a_broken_wrapper_does_not_stop_the_run(make_system: MakeSystem) -> None:
    @hookimpl(wrapper=True)
    def on_agent_message() -> Any:
        yield
        raise RuntimeError("recorder down")

    plugin = types.ModuleType("broken_recorder")
    plugin.on_agent_message = on_agent_message  # type: ignore[attr-defined]
    with ScriptedLLM([say("still fine")]) as llm:
        system = make_system(models={"test": model_table(llm)}, plugins=(plugin,))
        assert Agent(system).run("hi").text == "still fine"


def save_memory(system: Any, content: str, target: str = "notes") -> None:
    assert "Added" in system.call("memory", {"action": "add", "content": content, "target": target})


def test_the_memory_is_in_the_system_prompt_and_a_new_memory_shows_on_the_next_request(
    make_system: MakeSystem,
) -> None:
    script = [
        calls(call("memory", {"action": "add", "content": "Deploys go through make release."})),
        say("Saved."),
    ]
    with ScriptedLLM(script) as llm:
        system = make_system(models={"test": model_table(llm)})
        save_memory(system, "The user prefers short answers.", "user")
        Agent(system, toolsets=["memory"]).run("remember how we deploy")
    first, second = llm.requests[0].system_text(), llm.requests[1].system_text()
    assert "## Memory" in first and "The user prefers short answers." in first
    assert "Deploys go through make release." not in first
    assert "Deploys go through make release." in second  # saved mid-run, there on the next request
    assert first.index("You are a capable assistant") < first.index("About the user")


def test_the_skills_index_lists_each_skill_in_one_line(make_system: MakeSystem) -> None:
    with ScriptedLLM([say("ok")]) as llm:
        system = make_system(models={"test": model_table(llm)})
        skills = Path(system.data_dir) / "skills" / "release-notes"
        skills.mkdir(parents=True)
        (skills / "SKILL.md").write_text(
            "---\nname: release-notes\ndescription: Write release notes from the git log.\n---\nSteps...\n"
        )
        Agent(system, toolsets=["skills"]).run("hi")
    prompt = llm.requests[0].system_text()
    assert "## Skills" in prompt and "- release-notes: Write release notes from the git log." in prompt
    assert "- code-review:" in prompt  # the bundled ones too
    assert "## Memory" not in prompt  # no memory tool, no memory section


def test_the_starting_context_is_capped_and_can_be_turned_off(make_system: MakeSystem) -> None:
    with ScriptedLLM([say("one"), say("two"), say("three")]) as llm:
        system = make_system(models={"test": model_table(llm)})
        for n in range(30):
            save_memory(system, f"fact number {n}: " + "detail " * 40)
        Agent(system, toolsets=["memory"]).run("hi")
        Agent(system, toolsets=["memory"], starting_context_chars=500).run("hi")
        off = make_system(models={"test": model_table(llm)}, config={"agent": {"starting_context_chars": 0}})
        save_memory(off, "never shown")
        Agent(off, toolsets=["memory"]).run("hi")
    full, capped, none = (r.system_text() for r in llm.requests)
    assert "more entries not shown" in full and len(full) < 8_000  # the memory section keeps to its share
    assert "cut to fit the starting context's limit" in capped and len(capped) < 1_200
    assert "## Memory" not in none
