"""``hermes chat`` (a conversation on the terminal) and ``hermes run PROMPT`` (one task to the end, headless).

Both drive ``hermes_core.agent.Agent`` with the configured model (``--model NAME`` or ``[models] default``). The
agent works on a background thread; the main thread keeps the terminal: it shows what happens, answers the
approvals and questions the agent's tools ask (``Desk``), and turns Ctrl-C into a cancel of the whole turn.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TextIO

import click

from ._state import ConfigFailure, State, get_state

if TYPE_CHECKING:
    from rich.console import Console

    from ..agent import Agent, AgentEvent, AgentResult
    from ..models import Usage
    from ._desk import Desk

__all__ = ["RUN_EXIT_CODES", "chat_command", "run_command"]

RUN_EXIT_CODES = {
    "done": 0,
    "error": 1,
    "max_turns": 3,
    "refusal": 4,
    "length": 5,
    "content_filter": 6,
    "cancelled": 130,
}
_PREVIEW = 100
_STOP_WAIT = 5.0  # seconds to wait for a cancelled turn to hand the conversation back (it takes under one)


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


def _usage_text(usage: Usage) -> str:
    text = f"{usage.input_tokens:,} tokens in, {usage.output_tokens:,} out"
    if usage.cache_read_tokens:
        text += f", {usage.cache_read_tokens:,} read from the prompt cache"
    return text


class Display:
    """Shows an agent's events on a console: streamed text, one line per tool call and result, retries.

    Events of sub-agents (depth > 0) show their tool calls, indented, but not their text. Safe from several
    threads (the agent and its sub-agents report from worker threads). While a prompt is on the screen
    (``holding``), lines are kept back and shown when it is answered.
    """

    def __init__(self, console: Console, *, show_text: bool) -> None:
        self.console = console
        self.show_text = show_text
        self.streamed = False  # text of the top agent was shown since the last ``turn_started``
        self._lock = threading.RLock()
        self._mid_line = False
        self._held: list[Callable[[], None]] | None = None  # output kept back while a prompt is shown

    def turn_started(self) -> None:
        self.streamed = False

    def mid_line(self) -> None:
        """The cursor was left after a prompt: the next line starts with a line break."""
        with self._lock:
            self._mid_line = True

    def end_line(self) -> None:
        with self._lock:
            if self._mid_line:
                self.console.file.write("\n")
                self.console.file.flush()
                self._mid_line = False

    def line(self, text: str, style: str = "", depth: int = 0) -> None:
        from rich.text import Text

        with self._lock:
            if self._held is not None:
                self._held.append(lambda: self.line(text, style, depth))
                return
            self.end_line()
            self.console.print(Text("  " * depth + text, style=style), soft_wrap=True)

    def text(self, piece: str) -> None:
        """Streamed text of the top agent, as it comes."""
        with self._lock:
            if self._held is not None:
                self._held.append(lambda: self.text(piece))
                return
            self.console.file.write(piece)
            self.console.file.flush()
            self._mid_line = not piece.endswith("\n")
            self.streamed = True

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        """Keep other output back while a prompt waits for its answer."""
        with self._lock:
            self.end_line()
            self._held = []
        try:
            yield
        finally:
            with self._lock:
                held, self._held = self._held or [], None
            for show in held:
                show()

    def __call__(self, event: AgentEvent) -> None:
        from ..agent import ContextTrimmed, ModelRetrying, TextDelta, ToolCallFinished, ToolCallStarted

        sub = "[sub-agent] " if event.depth else ""
        if isinstance(event, TextDelta):
            if self.show_text and event.depth == 0:
                self.text(event.text)
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


def run_in_background(agent: Agent, prompt: str, desk: Desk | None = None) -> AgentResult:
    """``agent.run(prompt)`` on a worker thread while this thread answers the ``desk``'s questions; Ctrl-C
    (``KeyboardInterrupt`` here) cancels the whole turn and returns its partial result, ``cancelled``."""
    finished = threading.Event()
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = agent.run(prompt)
        except BaseException as err:  # handed back to the terminal's thread
            box["error"] = err
        finally:
            finished.set()
            if desk is not None:
                desk.wake()

    threading.Thread(target=work, name="hermes-agent-turn", daemon=True).start()
    with desk.turn() if desk is not None else contextlib.nullcontext():
        try:
            if desk is not None:
                desk.serve(finished)
            else:
                finished.wait()
        except KeyboardInterrupt:
            agent.cancel()
            if desk is not None:
                desk.close()  # every question of the turn is withdrawn: denied, whatever is typed later
            _wait_through_interrupts(finished, _STOP_WAIT)
    if "error" in box:
        raise box["error"]
    if "result" not in box:
        raise click.ClickException(f"the agent did not stop within {_STOP_WAIT:g} s of the cancel")
    result: AgentResult = box["result"]
    return result


def _wait_through_interrupts(finished: threading.Event, seconds: float) -> None:
    import time

    deadline = time.monotonic() + seconds
    while not finished.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            return
        try:
            finished.wait(left)
        except KeyboardInterrupt:  # another Ctrl-C while the turn stops: it is stopping already
            continue


# -- hermes chat ---------------------------------------------------------------------------------------------

_HELP = """\
/help            this list
/new             start a new conversation (a new session)
/tools           the tools the model may use
/model [NAME]    show the model, or switch to another configured one (the conversation goes on)
/usage           tokens used in this conversation
/quit, /exit     leave (Ctrl-D too)
Ctrl-C stops the current turn: the model request, running commands, sub-agents and their questions.
A line starting with // sends the rest with one slash (a message that starts with a path, say)."""


class Chat:
    """One ``hermes chat`` session: the conversation, its slash commands and its totals."""

    def __init__(
        self,
        state: State,
        display: Display,
        desk: Desk | None,
        options: tuple[str | None, tuple[str, ...], int | None, str | None],
    ) -> None:
        from ..models import Usage

        self.state = state
        self.display = display
        self.desk = desk
        self.model, self.toolsets, self.max_turns, session = options
        self.agent = _make_agent(state, self.model, self.toolsets, self.max_turns, session, "chat", display)
        self.usage = Usage()

    def banner(self) -> None:
        agent = self.agent
        tools = len(agent.system.available(agent.toolsets, agent.disabled))
        where = getattr(agent.client, "url", "")
        self.display.line(
            f"hermes chat · model {agent.client.name} ({agent.client.model}{' at ' + where if where else ''}) · "
            f"{tools} tools · session {agent.session_id}",
            "bold",
        )
        self.display.line("Ctrl-C stops a turn · Ctrl-D or /quit leaves · /help lists the commands", "dim")

    def command(self, text: str) -> bool:
        """Run a slash command; False when it says to quit."""
        name, _, rest = text.partition(" ")
        arg = rest.strip()
        line = self.display.line
        if name in ("/quit", "/exit"):
            return False
        if name == "/help":
            for row in _HELP.splitlines():
                line(row, "dim")
        elif name == "/new":
            self.agent = _make_agent(
                self.state, self.model, self.toolsets, self.max_turns, None, "chat", self.display
            )
            from ..models import Usage

            self.usage = Usage()
            line(f"(new conversation: session {self.agent.session_id})", "dim")
        elif name == "/tools":
            names = sorted(self.agent.system.available(self.agent.toolsets, self.agent.disabled))
            if self.agent.allowed_tools is not None:
                names = [n for n in names if n in self.agent.allowed_tools]
            line(f"{len(names)} tools:", "bold")
            line(", ".join(names) or "(none)")
        elif name == "/model":
            self._model(arg)
        elif name == "/usage":
            turns = sum(1 for m in self.agent.messages if m.get("role") == "user")
            line(f"this conversation: {_usage_text(self.usage)} ({turns} prompts)", "dim")
        else:
            line(f"unknown command {name} (/help lists them; start with // to send a slash)", "red")
        return True

    def _model(self, name: str) -> None:
        from ..models import ModelConfigError, get_model, model_names

        system = self.agent.system
        if not name:
            client = self.agent.client
            self.display.line(
                f"model {client.name} ({client.model}); configured: {', '.join(model_names(system))}"
            )
            return
        try:
            self.agent.client = get_model(system, name)
        except ModelConfigError as err:
            self.display.line(str(err), "red")
            return
        self.model = name
        self.display.line(
            f"(now talking to {name}: {self.agent.client.model}; the conversation goes on)", "dim"
        )

    def turn(self, text: str) -> None:
        self.display.turn_started()
        result = run_in_background(self.agent, text, self.desk)
        self.display.end_line()
        self.usage.add(result.usage)
        stop, line = result.stop_reason, self.display.line
        if stop == "cancelled":
            line("(turn stopped)", "yellow")
        elif stop == "error":
            line(f"model error: {result.error}", "red")
        elif stop == "max_turns":
            line(
                f"(stopped after {result.turns} model turns, the turn budget; say 'go on' to continue)",
                "yellow",
            )
        elif stop == "refusal":
            said = f": {result.text}" if result.text and not self.display.streamed else ""
            line(f"(the model refused{said})", "yellow")
        elif stop == "length":
            line(f"(cut off: {result.error})", "yellow")
        elif stop == "content_filter":
            line(f"({result.error})", "yellow")
        if result.usage:
            line(f"· {_usage_text(result.usage)}", "dim")


def _prompting(display: Display) -> Callable[[], contextlib.AbstractContextManager[Any]]:
    @contextlib.contextmanager
    def prompting() -> Iterator[None]:
        from ._desk import drop_typed_ahead

        with display.holding():
            drop_typed_ahead(sys.stdin)
            try:
                yield
            except BaseException:  # Ctrl-C at the prompt: what follows starts on a line of its own
                display.mid_line()
                raise

    return prompting


@click.command("chat")
@_agent_options
def chat_command(
    model: str | None, toolsets: tuple[str, ...], max_turns: int | None, session: str | None
) -> None:
    """Talk with a model that uses the tools: answers stream in, tool calls are shown as they run.

    On a terminal, anything that needs approval (a dangerous command, a protected path) is asked here, one
    question at a time, also for sub-agents; without a terminal it is denied. Ctrl-C stops the current turn
    (its model request, running commands, sub-agents and their questions; the conversation goes on); Ctrl-D or
    /quit leaves. Slash commands (/help lists them) are handled here, never sent to the model. The conversation
    is recorded for the session_search tool.

    \b
    Exit status: 0 when you quit, 2 usage or configuration error (no model configured, unknown --model).
    """
    from ..security import TerminalApprover
    from ._call import terminal_ask_user
    from ._desk import Desk

    state = get_state()
    interactive = sys.stdin.isatty()
    console = _console(sys.stdout)
    display = Display(console, show_text=True)
    desk = None
    if interactive and not state.loaded:
        approver = TerminalApprover(output=sys.stdout)
        desk = Desk(approver, terminal_ask_user, _prompting(display))
        state.approver = desk
        state.ask_user = desk.ask_user
    chat = Chat(state, display, desk, (model, toolsets, max_turns, session))
    from ._cron import start_host_scheduler

    start_host_scheduler(
        state.system()
    )  # a long-lived process runs the scheduled jobs ([scheduler] in_process)
    chat.banner()
    while True:
        try:
            line = _read_line("\nyou> ", interactive)
        except EOFError:
            display.line("")
            break
        except KeyboardInterrupt:
            display.line("\n(Ctrl-D or /quit leaves)", "dim")
            continue
        text = line.strip()
        if not text:
            continue
        if text.startswith("//"):
            text = text[1:]
        elif text.startswith("/") and "/" not in text.split(" ", 1)[0][1:]:
            if not chat.command(text):
                break
            continue
        chat.turn(text)


# -- hermes run ----------------------------------------------------------------------------------------------


@click.command("run")
@click.argument("prompt")
@_agent_options
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the outcome as JSON (text, stop reason, tool calls, usage), also when interrupted.",
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
    Ctrl-C (SIGINT) stops the task: what was done so far is printed (with --json, the whole outcome).

    \b
    Exit status: 0 done, 1 the model failed (after retries), 2 usage or configuration error (no model
    configured, unknown --model or --toolset), 3 the turn budget ran out before the model finished,
    4 the model refused, 5 the answer was cut off at the model's output limit, 6 the provider's content
    filter stopped it, 130 interrupted.
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
    result = run_in_background(agent, prompt)
    if as_json:
        emit_json(result.as_dict())
    else:
        if result.text:
            click.echo(result.text)
        stop = result.stop_reason
        if stop == "cancelled":
            click.echo("hermes: interrupted", err=True)
        elif stop == "error":
            click.echo(f"hermes: model error: {result.error}", err=True)
        elif stop == "max_turns":
            click.echo(f"hermes: stopped after {result.turns} model turns (the turn budget)", err=True)
        elif stop in ("refusal", "length", "content_filter"):
            click.echo(f"hermes: {result.error}", err=True)
    ctx.exit(RUN_EXIT_CODES[result.stop_reason])
