"""``clarify``: ask the user a question (open or multiple choice) through the host's ``ask_user`` callback.

``terminal_ask_user`` is the callback the CLI supplies: it prints the question (and numbered choices) and
reads one line from the terminal.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

from hermes_core import CallContext, ToolError, ToolRegistry, Unavailable

TOOLSET = "clarify"
MAX_QUESTION = 2_000
MAX_CHOICES = 8
MAX_CHOICE = 200
MAX_ANSWER = 4_000

SCHEMA: dict[str, Any] = {
    "name": "clarify",
    "description": (
        "Ask the user a question and wait for the answer. Use only when you cannot proceed well without it "
        "(ambiguous request, a choice with real consequences). Give 'choices' for a multiple-choice question "
        "(the user may still answer freely); omit them for an open question."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "question": {"type": "string", "minLength": 1, "maxLength": MAX_QUESTION},
            "choices": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": MAX_CHOICE},
                "maxItems": MAX_CHOICES,
            },
        },
        "required": ["question"],
        "additionalProperties": False,
    },
}


def clarify(question: str, choices: list[str] | None = None, *, context: CallContext) -> str:
    """Ask through the host's callback and return the user's answer."""
    if not context.can_ask_user:
        raise ToolError(
            "no user is available to answer questions here; decide yourself and say so", retryable=False
        )
    question = question.strip()
    if not question:
        raise ToolError("'question' is empty")
    options = [" ".join(c.split()) for c in choices or () if c.strip()]
    if len(set(options)) != len(options):
        raise ToolError("'choices' contains duplicates")
    answer = context.ask_user(question, options or None)
    if not isinstance(answer, str):
        answer = "" if answer is None else str(answer)
    answer = answer.strip()
    if not answer:
        return "The user gave no answer."
    if len(answer) > MAX_ANSWER:
        answer = answer[:MAX_ANSWER] + " …(cut)"
    return f"User answered: {answer}"


def terminal_ask_user(
    question: str,
    choices: Sequence[str] | None = None,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
) -> str:
    """Ask on the terminal; a number picks the matching choice, anything else is a free answer.

    End of input (Ctrl-D, a closed pipe) gives an empty answer.
    """
    src = stdin if stdin is not None else sys.stdin
    out = stdout if stdout is not None else sys.stdout
    out.write(f"\n? {question}\n")
    for i, choice in enumerate(choices or (), 1):
        out.write(f"  {i}. {choice}\n")
    out.write("> " if not choices else f"> (1-{len(choices)} or your own answer) ")
    out.flush()
    line = src.readline()
    answer = line.strip()
    if choices and answer.isdigit() and 1 <= int(answer) <= len(choices):
        return choices[int(answer) - 1]
    return answer


def _host_can_ask(system: Any) -> bool | Unavailable:
    """Hidden unless the host gave the system a way to ask the user (by design: not a problem to report)."""
    if getattr(system, "ask_user", None) is None:
        return Unavailable("no ask_user callback: the host cannot ask the user questions", by_design=True)
    return True


def register(registry: ToolRegistry) -> None:
    registry.register(
        name="clarify",
        toolset=TOOLSET,
        schema=SCHEMA,
        handler=clarify,
        check_fn=_host_can_ask,
        emoji="❓",
        max_result_size_chars=MAX_ANSWER + 200,
    )
