"""The context budget: what is trimmed first, what always stays, and that the conversation stays well formed."""

from __future__ import annotations

from typing import Any

from hermes_core.agent import budget_chars, fit_messages
from hermes_core.agent._budget import conversation_chars


def exchange(n: int, size: int) -> list[dict[str, Any]]:
    call_id = f"c{n}"
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "t", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": call_id, "content": f"result {n} " + "x" * size},
    ]


def conversation(results: int, size: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "the task"}]
    for n in range(results):
        messages += exchange(n, size)
    return messages


def well_formed(messages: list[dict[str, Any]]) -> bool:
    """Every assistant tool call is followed by its result, and no result is orphaned."""
    pending: set[str] = set()
    for msg in messages:
        if msg["role"] == "tool":
            if msg["tool_call_id"] not in pending:
                return False
            pending.discard(msg["tool_call_id"])
        else:
            if pending:
                return False
            pending = {c["id"] for c in msg.get("tool_calls") or ()}
    return not pending


def test_nothing_changes_within_the_budget() -> None:
    messages = conversation(3, 100)
    before = [dict(m) for m in messages]
    assert not fit_messages(messages, 100_000)
    assert messages == before


def test_old_tool_results_are_cut_first_and_the_newest_stays_whole() -> None:
    messages = conversation(5, 5_000)
    report = fit_messages(messages, 12_000)
    assert report.results_cut >= 1 and report.messages_dropped == 0
    assert conversation_chars(messages) <= 12_000
    assert messages[-1]["content"] == "result 4 " + "x" * 5_000
    assert "trimmed to fit the context window" in messages[2]["content"]
    assert messages[2]["content"].startswith("result 0 ")
    assert well_formed(messages)


def test_whole_exchanges_go_next_and_a_note_says_so() -> None:
    messages = conversation(40, 400)
    report = fit_messages(messages, 6_000)
    assert report.messages_dropped > 0
    assert conversation_chars(messages) <= 6_000
    assert messages[0] == {"role": "user", "content": "the task"}  # the latest user message stays
    notes = [m for m in messages if "earlier messages were removed" in str(m.get("content"))]
    assert len(notes) == 1
    assert messages[-1]["content"].startswith("result 39 ")
    assert well_formed([m for m in messages if m not in notes])


def test_a_second_trim_folds_into_the_same_note() -> None:
    messages = conversation(40, 400)
    fit_messages(messages, 8_000)
    messages += exchange(99, 4_000)
    fit_messages(messages, 8_000)
    notes = [m for m in messages if "earlier messages were removed" in str(m.get("content"))]
    assert len(notes) == 1


def test_a_huge_latest_result_is_cut_as_a_last_resort() -> None:
    messages = conversation(1, 50_000)
    fit_messages(messages, 10_000)
    assert conversation_chars(messages) <= 10_000
    assert messages[-1]["content"].startswith("result 0 ") and "trimmed" in messages[-1]["content"]


def test_system_messages_are_never_dropped() -> None:
    messages = [{"role": "system", "content": "rules"}, *conversation(30, 500)]
    fit_messages(messages, 5_000)
    assert messages[0] == {"role": "system", "content": "rules"}


def test_budget_from_the_model_window() -> None:
    # 8k tokens, 1k reserved for the reply, 3.5 characters per token, minus definitions and prompt
    assert budget_chars(8_192, 1_024, 2_000) == int((8_192 - 1_024) * 3.5) - 2_000
    assert budget_chars(None, None, 0) == int((32_768 - 4_096) * 3.5)
    assert budget_chars(8_192, None, 0, override=50_000) == 50_000
    assert budget_chars(1_000, 900, 100_000) == 4_000  # never below a floor
