"""``delegate_task`` (sub-agents with their own conversation and turn budget) and ``mixture_of_agents`` (several
models answer, one combines the answers). Both use only ``hermes_core.agent`` and ``hermes_core.models``.

Both are hidden, with the reason, while no model is configured (``[models]`` in the config). Settings, in
``[plugins.agents]``: ``max_depth`` (how deep delegation may nest, default 1: sub-agents cannot delegate),
``max_concurrency`` (sub-agents running at once, default 3), ``max_tasks`` (tasks per call, default 6),
``subagent_max_turns`` (default 15), ``moa_models`` (reference models, default: every configured model) and
``moa_aggregator`` (default: the default model). The model is told the limits the config sets: delegate_task's
description and schema come from it through ``dynamic_schema_overrides``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hermes_core import CallContext, ToolError, ToolRegistry, Unavailable

if TYPE_CHECKING:
    from hermes_core import Host, ToolSystem
    from hermes_core.agent import Agent, AgentResult

MAX_CONCURRENCY = 3  # defaults of [plugins.agents] max_concurrency and max_tasks (shown in the schema)
MAX_TASKS = 6
TASKS_CEILING = 50  # the registered schema's bound; the config's max_tasks is what the model is shown
DEFAULT_SUBAGENT_TURNS = 15
DEFAULT_MAX_DEPTH = 1
MAX_MOA_MODELS = 6
NO_SUBAGENT_TOOLS = frozenset({"clarify"})  # nobody is there to answer a sub-agent's question

_TASK_PROPERTIES: dict[str, Any] = {
    "goal": {"type": "string", "maxLength": 4_000},  # a missing or empty goal is refused by the handler
    "background": {"type": "string", "maxLength": 20_000},
    "toolsets": {"type": "array", "items": {"type": "string"}, "maxItems": 16},
}


def _delegate_description(concurrency: int, nested: bool) -> str:
    """The limits the schema cannot say; the number of tasks is its ``tasks.maxItems``."""
    further = "; they may delegate in turn" if nested else ""
    return (
        "Fresh sub-agents do self-contained tasks, each returning a short report. goal: one task; tasks: "
        f"several, {concurrency} run at a time. Each sees only its goal and background and cannot ask the "
        f"user{further}."
    )


def _delegate_parameters(max_tasks: int, turns: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            **_TASK_PROPERTIES,
            "tasks": {
                "type": "array",
                "minItems": 1,
                "maxItems": max_tasks,
                "items": {
                    "type": "object",
                    "properties": _TASK_PROPERTIES,
                    "additionalProperties": False,
                },
            },
            "max_turns": {
                "type": "integer",
                "minimum": 1,
                "maximum": 50,
                "description": f"Per sub-agent (default {turns}).",
            },
        },
        "additionalProperties": False,
    }


DELEGATE_SCHEMA: dict[str, Any] = {
    "name": "delegate_task",
    "description": _delegate_description(MAX_CONCURRENCY, False),
    "parameters": _delegate_parameters(TASKS_CEILING, DEFAULT_SUBAGENT_TURNS),
}

MOA_SCHEMA: dict[str, Any] = {
    "name": "mixture_of_agents",
    "description": (
        "Ask several models the same hard question and get one answer that combines their best points (an "
        "aggregator model reads all answers). One request per model plus one: use it for hard reasoning or "
        "judgement calls, not lookups. The models have no tools: put everything they need into 'prompt'."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "minLength": 1, "maxLength": 40_000},
            "models": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "maxItems": MAX_MOA_MODELS,
                "description": "Configured model names to ask (default: the configured reference models).",
            },
            "aggregator": {"type": "string", "description": "The model that combines the answers."},
        },
        "required": ["prompt"],
        "additionalProperties": False,
    },
}

SUBAGENT_PROMPT = (
    "You are a sub-agent: another agent handed you one task. Work on it with your tools in the folder "
    "{workspace}. Nobody can answer questions, so decide sensibly and say what you assumed. Finish with a short "
    "report of what you found or did (facts, paths, results): the report is all the other agent will see."
)
REFERENCE_PROMPT = "Answer the question as well as you can: accurate, complete, and concise."
AGGREGATOR_PROMPT = (
    "You are given a question and several answers to it from different models. Write the single best answer: "
    "keep what is correct and useful, drop what is wrong, resolve disagreements by reasoning, and do not "
    "mention the other answers or models."
)


def model_check(system: ToolSystem) -> tuple[bool, str] | Unavailable:
    """Hidden while no usable model is configured; the reason says what to add."""
    from hermes_core.models import model_problem

    problem = model_problem(system.config)
    if problem is None:
        return True, ""
    if not system.config.data.get("models"):
        return Unavailable(problem, by_design=True)  # no model configured at all: opt-in, not a problem
    return False, problem


def _settings(context: Any) -> dict[str, Any]:
    return dict(context.plugin_config("agents"))


class _Limits:
    """The delegation limits ``[plugins.agents]`` sets (``ToolError`` for a value that is not a whole number)."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.max_depth = _int_setting(settings, "max_depth", DEFAULT_MAX_DEPTH)
        self.concurrency = max(1, _int_setting(settings, "max_concurrency", MAX_CONCURRENCY))
        self.max_tasks = min(TASKS_CEILING, max(1, _int_setting(settings, "max_tasks", MAX_TASKS)))
        self.turns = _int_setting(settings, "subagent_max_turns", DEFAULT_SUBAGENT_TURNS) or 1


def delegate_overrides(available: frozenset[str], system: ToolSystem) -> dict[str, Any]:
    """What the model is told about delegate_task: the configured limits, not hard-coded ones."""
    limits = _Limits(_settings(system))
    return {
        "description": _delegate_description(limits.concurrency, limits.max_depth > 1),
        "parameters": _delegate_parameters(limits.max_tasks, limits.turns),
    }


def _int_setting(settings: dict[str, Any], key: str, default: int) -> int:
    value = settings.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ToolError(f"[plugins.agents] {key} must be a whole number, got {value!r}", retryable=False)
    return value


def _names(settings: dict[str, Any], key: str) -> list[str] | None:
    value = settings.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ToolError(f"[plugins.agents] {key} must be a list of model names", retryable=False)


# -- delegate_task -------------------------------------------------------------------------------------------


def _allowed_tools(
    context: CallContext, parent: Agent | None, requested: Sequence[str] | None, may_delegate: bool
) -> frozenset[str]:
    assert context.host is not None
    allowed = set(context.enabled if context.enabled is not None else context.host.available())
    if parent is not None and parent.allowed_tools is not None:
        allowed &= parent.allowed_tools
    if requested:
        try:
            allowed &= context.host.available(list(requested))
        except ValueError as err:  # an unknown toolset
            raise ToolError(f"toolsets: {err}") from None
    allowed -= NO_SUBAGENT_TOOLS
    if not may_delegate:
        allowed.discard("delegate_task")
    return frozenset(allowed)


def subagent_tools(system: Host, toolsets: Sequence[str] | None = None) -> frozenset[str]:
    """The tools a sub-agent started outside a tool call gets (``hermes kanban dispatch``): ``toolsets`` (default:
    the system's selection) without the tools nobody could answer (``clarify``) and without ``delegate_task``."""
    allowed = set(system.available(list(toolsets) if toolsets else None)) - NO_SUBAGENT_TOOLS
    allowed.discard("delegate_task")
    return frozenset(allowed)


def make_subagent(
    system: Host,
    allowed: frozenset[str],
    max_turns: int,
    *,
    parent: Agent | None = None,
    session_id: str | None = None,
    model: str | None = None,
    system_prompt: str = SUBAGENT_PROMPT,
) -> Agent:
    """A sub-agent as delegate_task makes them: its own conversation, ``allowed`` tools, a turn budget, the
    sub-agent prompt (``ModelConfigError`` when no model is usable)."""
    from hermes_core.agent import Agent

    return Agent(
        system,
        model=model,
        parent=parent,
        allowed_tools=allowed,
        system_prompt=system_prompt,
        max_turns=max_turns,
        session_id=session_id,
    )


def subagent_limits(system: Host) -> tuple[int, int]:
    """``(max_concurrency, subagent_max_turns)`` from ``[plugins.agents]``."""
    limits = _Limits(_settings(system))
    return limits.concurrency, limits.turns


def _task_prompt(task: dict[str, Any]) -> str:
    prompt = f"Your task: {task['goal'].strip()}"
    background = str(task.get("background") or "").strip()
    if background:
        prompt += f"\n\nBackground:\n{background}"
    return prompt


def _report(number: int, task: dict[str, Any], result: AgentResult | BaseException, budget: int) -> str:
    goal = " ".join(task["goal"].split())
    goal = goal if len(goal) <= 100 else goal[:97] + "..."
    if isinstance(result, BaseException):
        return f"## Task {number}: {goal}\nstatus: failed ({type(result).__name__}: {result})"
    calls = len(result.tool_calls)
    status = {
        "done": f"done in {result.turns} turn(s), {calls} tool call(s)",
        "max_turns": f"stopped: its budget of {budget} turns ran out ({calls} tool call(s)); the report may be partial",
        "cancelled": "cancelled before it finished",
        "error": f"failed: {result.error}",
    }.get(result.stop_reason, f"stopped ({result.stop_reason}): {result.error}")
    text = result.text.strip() or "(no report)"
    return f"## Task {number}: {goal}\nstatus: {status} · session {result.session_id}\n\n{text}"


def delegate_task(
    goal: str | None = None,
    background: str = "",
    toolsets: list[str] | None = None,
    tasks: list[dict[str, Any]] | None = None,
    max_turns: int | None = None,
    *,
    context: CallContext,
) -> str:
    """Run each task in a sub-agent (a few at a time) and return their reports."""
    from hermes_core.agent import Agent
    from hermes_core.models import ModelConfigError

    if (goal is None) == (tasks is None):
        raise ToolError("give either 'goal' (one task) or 'tasks' (several), not both and not neither")
    items = tasks if tasks is not None else [{"goal": goal, "background": background, "toolsets": toolsets}]
    if any(not str(t.get("goal") or "").strip() for t in items):
        raise ToolError("every task needs a non-empty 'goal'")
    system = context.host
    if system is None:
        raise ToolError("delegate_task needs a tool system", retryable=False)
    limits = _Limits(_settings(context))
    if len(items) > limits.max_tasks:
        raise ToolError(
            f"{len(items)} tasks is more than the {limits.max_tasks} one call may hand out "
            "([plugins.agents] max_tasks); merge some, or delegate in several calls"
        )
    max_depth = limits.max_depth
    turns = max_turns or limits.turns
    parent = Agent.current(context)
    depth = parent.depth if parent is not None else 0
    if depth >= max_depth:
        raise ToolError(
            f"sub-agents at depth {depth} may not delegate further (the limit is {max_depth}); do the work yourself",
            retryable=False,
        )
    agents = []
    try:
        for task in items:
            allowed = _allowed_tools(
                context, parent, task.get("toolsets"), may_delegate=depth + 1 < max_depth
            )
            agents.append(
                make_subagent(
                    system,
                    allowed,
                    turns,
                    parent=parent,
                    session_id=None
                    if parent is not None
                    else f"{context.session_id}/task-{os.urandom(3).hex()}",  # no uuid import at load
                )
            )
    except ModelConfigError as err:
        raise ToolError(f"no model for the sub-agents: {err}", retryable=False) from None
    results: list[AgentResult | BaseException] = []
    import concurrent.futures as cf

    pool = cf.ThreadPoolExecutor(
        max_workers=min(limits.concurrency, len(agents)), thread_name_prefix="hermes-subagent"
    )
    try:
        futures = [
            pool.submit(agent.run, _task_prompt(task)) for agent, task in zip(agents, items, strict=True)
        ]
        for future in futures:
            try:
                results.append(future.result())
            except Exception as err:  # a sub-agent that breaks is reported, the others still count
                results.append(err)
    finally:
        if len(results) < len(agents):  # interrupted or timed out: stop the sub-agents still working
            for agent in agents:
                agent.cancel()
        pool.shutdown(wait=False, cancel_futures=True)
    reports = [
        _report(i, task, res, turns) for i, (task, res) in enumerate(zip(items, results, strict=True), 1)
    ]
    return "\n\n".join(reports)


# -- mixture_of_agents ---------------------------------------------------------------------------------------


def _answer(agent: Agent, prompt: str) -> AgentResult:
    return agent.run(prompt)


def mixture_of_agents(
    prompt: str, models: list[str] | None = None, aggregator: str | None = None, *, context: CallContext
) -> str:
    """Ask the reference models at once, then let the aggregator combine their answers."""
    from hermes_core.agent import Agent
    from hermes_core.models import ModelConfigError, default_model_name, model_names

    system = context.host
    if system is None:
        raise ToolError("mixture_of_agents needs a tool system", retryable=False)
    settings = _settings(context)
    configured = model_names(system)
    names = models or _names(settings, "moa_models") or configured
    names = list(dict.fromkeys(names))[:MAX_MOA_MODELS]
    judge = aggregator or settings.get("moa_aggregator") or default_model_name(system.config)
    unknown = [n for n in [*names, judge] if n not in configured]
    if unknown or judge is None:
        raise ToolError(
            f"unknown model(s) {', '.join(map(repr, unknown or ['(no aggregator)']))}; "
            f"configured models: {', '.join(configured)}"
        )
    parent = Agent.current(context)
    base = parent.session_id if parent is not None else context.session_id

    def make(model: str, system_prompt: str, role: str) -> Agent:
        return Agent(
            system,
            model=model,
            parent=parent,
            allowed_tools=(),
            system_prompt=system_prompt,
            max_turns=1,
            record=False,
            session_id=f"{base}/moa-{role}-{model}",
        )

    try:
        references = [make(name, REFERENCE_PROMPT, "ref") for name in names]
        judge_agent = make(str(judge), AGGREGATOR_PROMPT, "aggregate")
    except ModelConfigError as err:
        raise ToolError(f"a model is not usable: {err}", retryable=False) from None
    import concurrent.futures as cf

    with cf.ThreadPoolExecutor(max_workers=len(references), thread_name_prefix="hermes-moa") as pool:
        results = list(pool.map(_answer, references, [prompt] * len(references)))
    answers = [(n, r.text.strip()) for n, r in zip(names, results, strict=True) if r.ok and r.text.strip()]
    failed = [f"{n} ({r.error or r.stop_reason})" for n, r in zip(names, results, strict=True) if not r.ok]
    if not answers:
        raise ToolError(f"no model answered: {'; '.join(failed) or 'all answers were empty'}")
    numbered = "\n\n".join(f"### Answer {i}\n{text}" for i, (_, text) in enumerate(answers, 1))
    combined = judge_agent.run(f"## Question\n{prompt}\n\n## Answers\n\n{numbered}")
    if not combined.ok or not combined.text.strip():
        raise ToolError(f"the aggregator {judge!r} failed: {combined.error or combined.stop_reason}")
    note = f"[combined by {judge} from the answers of {', '.join(n for n, _ in answers)}"
    note += f"; no answer from {', '.join(failed)}]" if failed else "]"
    return f"{combined.text.strip()}\n\n{note}"


def register(registry: ToolRegistry) -> None:
    registry.register(
        name="delegate_task",
        toolset="delegation",
        schema=DELEGATE_SCHEMA,
        handler=delegate_task,
        check_fn=model_check,
        dynamic_schema_overrides=delegate_overrides,
        emoji="🧑‍🤝‍🧑",
        max_result_size_chars=40_000,
        timeout=1_800,
    )
    registry.register(
        name="mixture_of_agents",
        toolset="moa",
        schema=MOA_SCHEMA,
        handler=mixture_of_agents,
        check_fn=model_check,
        emoji="🧠",
        max_result_size_chars=20_000,
        timeout=600,
        parallel_safe=True,
    )
