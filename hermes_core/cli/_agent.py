"""``hermes chat`` (a conversation on the terminal) and ``hermes run PROMPT`` (one task to the end, headless).

Both drive ``hermes_core.agent.Agent`` with the configured model (``--model NAME`` or ``[models] default``).
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

import click

from ._state import ConfigFailure, State, get_state

if TYPE_CHECKING:
    from rich.console import Console

    from ..agent import Agent, AgentEvent
    from ..security import ApprovalRequest, Approver

__all__ = ["RUN_EXIT_CODES", "chat_command", "run_command"]

RUN_EXIT_CODES = {"done": 0, "error": 1, "max_turns": 3, "cancelled": 130}
_PREVIEW = 100


def _agent_options(command: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(
        [
            click.option(
                "-m", "--model", metavar="NAME", help="A model of the [models] table (default: its default)."
            ),
            click.option(
                "--toolset",
                "toolsets",
                multiple=True,
                metavar="T",
                help="Offer only these toolsets (repeatable).",
            ),
            click.option(
                "--max-turns", type=click.IntRange(min=1), help="Model requests per task (default 30)."
            ),
            click.option("--session", metavar="ID", help="Record the conversation under this session id."),
        ]
    ):
        command = option(command)
    return command


def _make_agent(
    state: State,
    model: str | None,
    toolsets: tuple[str, ...],
    max_turns: int | None,
    session: str | None,
    prefix: str,
    on_event: Callable[[AgentEvent], None] | None,
) -> Agent:
    from ..agent import Agent, new_session_id
    from ..models import ModelConfigError
    from ..selection import UnknownToolsetError

    system = state.system()
    try:
        return Agent(
            system,
            model=model,
            toolsets=list(toolsets) or None,
            max_turns=max_turns,
            session_id=session or new_session_id(prefix),
            on_event=on_event,
        )
    except ModelConfigError as err:
        raise ConfigFailure(str(err)) from None
    except UnknownToolsetError as err:
        if toolsets:
            raise click.BadParameter(str(err), param_hint="'--toolset'") from None
        raise


def _preview(text: str, limit: int = _PREVIEW) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _error_of(result: str) -> str:
    try:
        value = json.loads(result)
    except ValueError:
        return result
    return str(value.get("error", result)) if isinstance(value, dict) else result


class Display:
    """Shows an agent's events on a console: streamed text, one line per tool call and result, retries.

    Events of sub-agents (depth > 0) show their tool calls, indented, but not their text. Safe from several
    threads (sub-agents report from worker threads).
    """

    def __init__(self, console: Console, *, show_text: bool) -> None:
        self.console = console
        self.show_text = show_text
        self._lock = threading.RLock()
        self._mid_line = False

    def end_line(self) -> None:
        with self._lock:
            if self._mid_line:
                self.console.file.write("\n")
                self.console.file.flush()
                self._mid_line = False

    def line(self, text: str, style: str = "", depth: int = 0) -> None:
        from rich.text import Text

        with self._lock:
            self.end_line()
            self.console.print(Text("  " * depth + text, style=style), soft_wrap=True)

    def __call__(self, event: AgentEvent) -> None:
        from ..agent import ContextTrimmed, ModelRetrying, TextDelta, ToolCallFinished, ToolCallStarted

        sub = "[sub-agent] " if event.depth else ""
        if isinstance(event, TextDelta):
            if self.show_text and event.depth == 0:
                with self._lock:
                    self.console.file.write(event.text)
                    self.console.file.flush()
                    self._mid_line = not event.text.endswith("\n")
        elif isinstance(event, ToolCallStarted):
            self.line(f"{sub}⚙ {event.name} {_preview(event.arguments)}", "cyan", event.depth)
        elif isinstance(event, ToolCallFinished):
            out = event.outcome
            if out.ok:
                detail = f"{len(out.result):,} chars" + (" (cut to its limit)" if out.truncated else "")
                self.line(f"{sub}  ✓ {out.name} · {out.duration_ms:.0f} ms · {detail}", "green", event.depth)
            else:
                self.line(
                    f"{sub}  ✗ {out.name} {out.status}: {_preview(_error_of(out.result))}", "red", event.depth
                )
        elif isinstance(event, ModelRetrying):
            self.line(
                f"{sub}… {_preview(event.reason, 160)}; retrying in {event.delay:.1f} s (attempt {event.attempt})",
                "yellow",
                event.depth,
            )
        elif isinstance(event, ContextTrimmed) and event.depth == 0:
            self.line(
                f"(context trimmed: {event.chars_removed:,} characters of older messages to fit the model's window)",
                "dim",
            )


class OneAtATime:
    """An approver wrapper that asks one question at a time (sub-agents may ask from several threads)."""

    def __init__(self, approver: Approver) -> None:
        self._approver = approver
        self._lock = threading.Lock()

    def approve(self, request: ApprovalRequest) -> Any:
        with self._lock:
            return self._approver.approve(request)


def _console(stream: TextIO) -> Console:
    from rich.console import Console

    return Console(file=stream, highlight=False, soft_wrap=True)


def _read_line(prompt: str, interactive: bool) -> str:
    if interactive:
        return input(prompt)
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line


@click.command("chat")
@_agent_options
def chat_command(
    model: str | None, toolsets: tuple[str, ...], max_turns: int | None, session: str | None
) -> None:
    """Talk with a model that uses the tools: answers stream in, tool calls are shown as they run.

    On a terminal, anything that needs approval (a dangerous command, a protected path) is asked here; without
    a terminal it is denied. Ctrl-C stops the current turn (the conversation goes on); Ctrl-D or /exit quits;
    /new starts a new conversation. The conversation is recorded for the session_search tool.

    \b
    Exit status: 0 when you quit, 2 usage or configuration error (no model configured, unknown --model).
    """
    from ..security import TerminalApprover
    from ._call import terminal_ask_user

    state = get_state()
    interactive = sys.stdin.isatty()
    if interactive and not state.loaded:
        state.approver = OneAtATime(TerminalApprover())
        state.ask_user = terminal_ask_user
    console = _console(sys.stdout)
    display = Display(console, show_text=True)
    agent = _make_agent(state, model, toolsets, max_turns, session, "chat", display)
    from ._cron import start_host_scheduler

    start_host_scheduler(
        state.system()
    )  # a long-lived process runs the scheduled jobs ([scheduler] in_process)
    tools = len(agent.system.available(agent.toolsets, agent.disabled))
    where = getattr(agent.client, "url", "")
    display.line(
        f"hermes chat · model {agent.client.name} ({agent.client.model}{' at ' + where if where else ''}) · "
        f"{tools} tools · session {agent.session_id}",
        "bold",
    )
    display.line("Ctrl-C stops a turn · Ctrl-D or /exit quits · /new starts over", "dim")
    while True:
        try:
            line = _read_line("\nyou> ", interactive)
        except EOFError:
            display.line("")
            break
        except KeyboardInterrupt:
            display.line("\n(Ctrl-D or /exit quits)", "dim")
            continue
        text = line.strip()
        if not text:
            continue
        if text in ("/exit", "/quit"):
            break
        if text == "/new":
            agent = _make_agent(state, model, toolsets, max_turns, None, "chat", display)
            display.line(f"(new conversation: session {agent.session_id})", "dim")
            continue
        try:
            result = agent.run(text)
        except KeyboardInterrupt:
            display.line("(turn stopped)", "yellow")
            continue
        display.end_line()
        if result.stop_reason == "cancelled":
            display.line("(turn stopped)", "yellow")
        elif result.stop_reason == "error":
            display.line(f"model error: {result.error}", "red")
        elif result.stop_reason == "max_turns":
            display.line(
                f"(stopped after {result.turns} model turns, the turn budget; say 'go on' to continue)",
                "yellow",
            )


@click.command("run")
@click.argument("prompt")
@_agent_options
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the outcome as JSON (text, stop reason, tool calls, usage).",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress on stderr, only the answer.")
def run_command(
    prompt: str,
    model: str | None,
    toolsets: tuple[str, ...],
    max_turns: int | None,
    session: str | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Run one task to the end without a human and print the model's final answer.

    PROMPT is the task ('-' reads it from stdin). Tool calls are shown on stderr as they run (not with
    --quiet). Nobody is there to approve: anything that needs approval is denied and the model is told.

    \b
    Exit status: 0 done, 1 the model failed (after retries), 2 usage or configuration error (no model
    configured, unknown --model or --toolset), 3 the turn budget ran out before the model finished,
    130 interrupted.
    """
    from ._output import emit_json

    if prompt == "-":
        prompt = sys.stdin.read()
    if not prompt.strip():
        raise click.UsageError("the prompt is empty")
    state = get_state()
    display = None if quiet else Display(_console(sys.stderr), show_text=False)
    agent = _make_agent(state, model, toolsets, max_turns, session, "run", display)
    ctx = click.get_current_context()
    try:
        result = agent.run(prompt)
    except KeyboardInterrupt:
        click.echo("hermes: interrupted", err=True)
        ctx.exit(RUN_EXIT_CODES["cancelled"])
    if as_json:
        emit_json(result.as_dict())
    else:
        if result.text:
            click.echo(result.text)
        if result.stop_reason == "error":
            click.echo(f"hermes: model error: {result.error}", err=True)
        elif result.stop_reason == "max_turns":
            click.echo(f"hermes: stopped after {result.turns} model turns (the turn budget)", err=True)
    ctx.exit(RUN_EXIT_CODES[result.stop_reason])
