"""The context budget: keep a conversation inside the model's window by trimming, oldest first.

Sizes are estimated in characters (about 3.5 per token, which errs on the safe side for English, code and
JSON) because no tokenizer is universal across providers. When the conversation is too big, in this order:

1. old tool results (everything before the latest assistant turn) are cut to a short head and a note;
2. the oldest whole exchanges are dropped (an assistant message always goes with its tool results), replaced by
   one note; the latest user message and the latest assistant turn with its results always stay;
3. if that is still not enough, the largest remaining tool results are cut.

Trimming rather than summarising: it costs no model call, never invents anything, and is deterministic; the
full messages were already handed to the host's recorder (``on_agent_message``), so nothing is lost for good.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_CONTEXT_WINDOW",
    "TrimReport",
    "budget_chars",
    "conversation_chars",
    "fit_messages",
]

CHARS_PER_TOKEN = 3.5
DEFAULT_CONTEXT_WINDOW = 32_768  # tokens, when the model's context_window is not configured
MIN_BUDGET_CHARS = 4_000
_OLD_RESULT_HEAD = 300
_TRIMMED = "hermes_trimmed"  # marks a result already cut, and the note standing for dropped messages


@dataclass(slots=True)
class TrimReport:
    """What ``fit_messages`` did: characters removed, messages dropped, tool results cut."""

    chars_removed: int = 0
    messages_dropped: int = 0
    results_cut: int = 0

    def __bool__(self) -> bool:
        return bool(self.chars_removed or self.messages_dropped)


def message_chars(message: dict[str, Any]) -> int:
    """The estimated size of one message on the wire."""
    content = message.get("content")
    size = (
        len(content) if isinstance(content, str) else len(json.dumps(content, default=str)) if content else 0
    )
    calls = message.get("tool_calls")
    if calls:
        size += len(json.dumps(calls, default=str))
    return size + 16


def conversation_chars(messages: Sequence[dict[str, Any]]) -> int:
    return sum(message_chars(m) for m in messages)


def budget_chars(
    context_window: int | None,
    max_output_tokens: int | None,
    fixed_chars: int,
    *,
    override: int | None = None,
) -> int:
    """Characters the conversation may use: the window minus the reply's reserve, the tool definitions and the
    system prompt (``fixed_chars``). ``override`` (a host's own figure, in characters) wins when given."""
    if override is not None:
        return max(MIN_BUDGET_CHARS, override - fixed_chars)
    window = context_window or DEFAULT_CONTEXT_WINDOW
    reserve = max_output_tokens or min(4_096, window // 4)
    return max(MIN_BUDGET_CHARS, int((window - reserve) * CHARS_PER_TOKEN) - fixed_chars)


def _cut(message: dict[str, Any], keep: int) -> int:
    content = message.get("content")
    if not isinstance(content, str) or len(content) <= keep + 200:
        return 0
    removed = len(content) - keep
    message["content"] = (
        content[:keep] + f"\n[... {removed} characters of this tool result were trimmed to fit the context "
        "window; call the tool again if you need them ...]"
    )
    message[_TRIMMED] = True
    return removed - 120


def _last_index(messages: Sequence[dict[str, Any]], role: str) -> int:
    """The index of the last message of ``role`` (a note standing for dropped messages does not count)."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == role and not (role == "user" and messages[i].get(_TRIMMED)):
            return i
    return -1


def fit_messages(messages: list[dict[str, Any]], budget: int) -> TrimReport:
    """Trim ``messages`` in place until their estimated size fits ``budget`` characters (see the module doc)."""
    report = TrimReport()
    size = conversation_chars(messages)
    if size <= budget:
        return report
    last_assistant = _last_index(messages, "assistant")
    tail = last_assistant if last_assistant >= 0 else len(messages)

    # 1. old tool results
    for msg in messages[:tail]:
        if size <= budget:
            return report
        if msg.get("role") == "tool" and not msg.get(_TRIMMED):
            removed = _cut(msg, _OLD_RESULT_HEAD)
            if removed > 0:
                size -= removed
                report.chars_removed += removed
                report.results_cut += 1
    if size <= budget:
        return report

    # 2. the oldest exchanges
    _drop_exchanges(messages, budget, size, report)
    size = conversation_chars(messages)

    # 3. the largest remaining results
    for _ in range(64):
        if size <= budget:
            break
        tools = [m for m in messages if m.get("role") == "tool" and isinstance(m.get("content"), str)]
        if not tools:
            break
        largest = max(tools, key=lambda m: len(m["content"]))
        keep = max(200, len(largest["content"]) - (size - budget) - 400)
        removed = _cut(largest, min(keep, len(largest["content"]) // 2))
        if removed <= 0:
            break
        size -= removed
        report.chars_removed += removed
        report.results_cut += 1
    return report


def _drop_exchanges(messages: list[dict[str, Any]], budget: int, size: int, report: TrimReport) -> None:
    start = 0
    while start < len(messages) and messages[start].get("role") == "system":
        start += 1
    groups: list[list[int]] = []
    for i in range(start, len(messages)):
        role = messages[i].get("role")
        if role == "tool" and groups:
            groups[-1].append(i)
        else:
            groups.append([i])
    last_user = _last_index(messages, "user")
    last_assistant = _last_index(messages, "assistant")
    protected = {g[0] for g in groups if g[0] == last_user or g[0] >= last_assistant >= 0}
    drop: set[int] = set()
    dropped_before = 0
    for group in groups:
        if size <= budget:
            break
        if group[0] in protected:
            continue
        for i in group:
            dropped_before += int(messages[i].get(_TRIMMED) or 0) if messages[i].get("role") == "user" else 0
            size -= message_chars(messages[i])
            drop.add(i)
    if not drop:
        return
    first = min(drop)
    count = (
        sum(1 for i in drop if not (messages[i].get("role") == "user" and messages[i].get(_TRIMMED)))
        + dropped_before
    )
    note = {
        "role": "user",
        "content": f"[{count} earlier messages were removed to fit the model's context window.]",
        _TRIMMED: count,
    }
    removed_chars = sum(message_chars(messages[i]) for i in drop) - message_chars(note)
    messages[:] = [note if i == first else m for i, m in enumerate(messages) if i == first or i not in drop]
    report.messages_dropped += len(drop)
    report.chars_removed += max(0, removed_chars)
