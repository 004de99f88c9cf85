"""The agent loop: a model drives the tools of a ``ToolSystem`` (a public module hosts embed).

```python
from hermes_core import ToolSystem
from hermes_core.agent import Agent, TextDelta

system = ToolSystem.load(approver=my_approver)           # approvals go through the system's approver
agent = Agent(system, model="local", toolsets=["hermes-cli"], max_turns=20,
              on_event=lambda e: print(e.text, end="") if isinstance(e, TextDelta) else None)
result = agent.run("Which Python files import httpx?")   # -> AgentResult
result.text, result.stop_reason, result.tool_calls, result.usage
result = agent.run("And which of them are tests?")       # the conversation goes on
agent.cancel()                                           # from any thread: stops the run and all it started
result = await agent.arun("...")                         # async hosts
```

Each turn the loop asks for the definitions the model may see now, fits the conversation into the context
budget (old tool results trimmed first, see ``_budget``), sends one request (streamed), and runs the tool calls
through ``system.call_many_outcomes``: malformed arguments or unknown tools come back to the model as tool
results it can act on, approvals go to the system's approver (headless: denied). Messages are announced to the
``on_agent_message`` hook, which the built-ins use to record sessions for ``session_search``; the
``agent_context`` hook adds what the agent should know from the start (the built-ins: memory, a skills index)
to the system prompt.

A run works on a worker thread under a cancel token: ``cancel()`` reaches the model request, the running tool
calls (their process trees are killed), sub-agents and approvals, and ``run`` returns within about half a
second. Runs end as ``done``, ``max_turns``, ``cancelled``, ``error``, ``refusal``, ``length`` or
``content_filter`` (``AgentResult.stop_reason``).

Settings come from the ``[agent]`` table (``toolsets``, ``max_turns``, ``system_prompt``,
``starting_context_chars``) and the model from ``[models]`` (see ``hermes_core.models``); keyword arguments
override both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._agent import DEFAULT_MAX_TURNS, DEFAULT_SYSTEM_PROMPT, Agent, EventCallback, new_session_id
from ._budget import CHARS_PER_TOKEN, DEFAULT_CONTEXT_WINDOW, TrimReport, budget_chars, fit_messages
from ._events import (
    AgentEvent,
    AgentFinished,
    ContextTrimmed,
    ModelRetrying,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnStarted,
    describe,
)
from ._result import AgentResult, StopReason

if TYPE_CHECKING:
    from ..system import ToolSystem

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_MAX_TURNS",
    "DEFAULT_SYSTEM_PROMPT",
    "Agent",
    "AgentEvent",
    "AgentFinished",
    "AgentResult",
    "ContextTrimmed",
    "EventCallback",
    "ModelRetrying",
    "StopReason",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "TrimReport",
    "TurnStarted",
    "budget_chars",
    "describe",
    "fit_messages",
    "new_session_id",
    "run_agent",
]


def run_agent(system: ToolSystem, prompt: str, **options: Any) -> AgentResult:
    """One-shot: ``Agent(system, **options).run(prompt)``."""
    return Agent(system, **options).run(prompt)
