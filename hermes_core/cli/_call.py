"""``hermes call NAME [JSON | key=value ...]``: one tool call through the full pipeline."""

from __future__ import annotations

import difflib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ._output import emit_json
from ._state import get_state
from ._tools import toolset_members

if TYPE_CHECKING:
    from ..registry import ToolEntry

__all__ = ["EXIT_CODES", "call_command", "check_argument_names", "parse_call_arguments", "terminal_ask_user"]

EXIT_CODES = {"ok": 0, "error": 1, "blocked": 3, "denied": 4}


def _json_object(text: str, where: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as err:
        raise click.BadParameter(f"invalid JSON arguments{where}: {err}", param_hint="ARGUMENTS") from None
    if not isinstance(value, dict):
        raise click.BadParameter(f"JSON arguments{where} must be an object", param_hint="ARGUMENTS")
    return value


def _read_source(item: str) -> tuple[str, str]:
    """The text of ``-`` (standard input) or ``@path`` (a file), and where it came from."""
    if item == "-":
        return sys.stdin.read(), " from standard input"
    path = Path(item[1:]).expanduser()
    try:
        return path.read_text("utf-8"), f" in {path}"
    except (OSError, UnicodeDecodeError) as err:
        raise click.BadParameter(f"cannot read {path}: {err}", param_hint="ARGUMENTS") from None


def parse_call_arguments(items: Sequence[str], parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    """One JSON object (inline, ``-`` for standard input or ``@file``), or ``key=value`` pairs converted by the
    tool's ``parameters`` schema: a property that takes a string keeps the text as typed (``command=true`` is the
    command "true"), any other value is read as JSON when it parses (``n=3``, ``flag=true``, ``tags=["a"]``)."""
    if len(items) == 1 and (items[0] == "-" or items[0].startswith("@")):
        return _json_object(*_read_source(items[0]))
    if len(items) == 1 and items[0].lstrip().startswith("{"):
        return _json_object(items[0], "")
    properties = (parameters or {}).get("properties")
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(
                f"expected key=value, one JSON object, - (standard input) or @FILE, got {item!r}",
                param_hint="ARGUMENTS",
            )
        prop = properties.get(key) if isinstance(properties, dict) else None
        out[key] = _typed_value(raw, prop if isinstance(prop, dict) else None)
    return out


def _typed_value(raw: str, prop: dict[str, Any] | None) -> Any:
    """``raw`` as the property wants it: the text itself when it takes a string (unless the text is JSON of
    another type it also takes), else JSON when the text parses, else the text (validation then says why)."""
    from ..schema._coerce import json_type

    kinds = _json_types(prop) if prop is not None else None
    try:
        parsed: Any = json.loads(raw)
    except ValueError:
        return raw
    if kinds is None or "string" not in kinds:
        return parsed
    return parsed if json_type(parsed) in kinds - {"string"} else raw


def _json_types(schema: dict[str, Any]) -> set[str] | None:
    """The JSON types a property schema allows (``integer`` counts as ``number`` too), None when it says none."""
    from ..schema._coerce import json_type

    found: set[str] = set()
    declared = schema.get("type")
    if isinstance(declared, str):
        found.add(declared)
    elif isinstance(declared, list):
        found.update(t for t in declared if isinstance(t, str))
    for key in ("enum", "const"):
        values = schema.get(key) if key == "enum" else [schema[key]] if key in schema else None
        if isinstance(values, list):
            found.update(t for t in map(json_type, values) if t is not None)
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(key) or ():
            inner = _json_types(branch) if isinstance(branch, dict) else None
            found.update(inner or ())
    if "number" in found:
        found.add("integer")
    return found or None


def check_argument_names(entry: ToolEntry, args: dict[str, Any]) -> None:
    """Refuse names the tool's schema does not know (a model's extra keys are dropped; a typo here is yours)."""
    params = entry.parameters
    if params.get("additionalProperties", False) is not False or params.get("patternProperties"):
        return  # the schema takes names of its own choosing
    known = [str(k) for k in params.get("properties") or {}]
    unknown = [k for k in args if k not in known]
    if not unknown:
        return
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1)
        hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    takes = f"it takes: {', '.join(known)}" if known else "it takes no arguments"
    raise click.BadParameter(
        f"{entry.name} has no argument {', '.join(hints)}; {takes}", param_hint="ARGUMENTS"
    )


def terminal_ask_user(question: str, choices: Sequence[str] | None = None) -> str:
    """Ask on the terminal (stderr prompt, so stdout keeps only the result); choices by number or text."""
    click.echo(question, err=True)
    if not choices:
        return str(click.prompt("answer", err=True))
    for number, choice in enumerate(choices, 1):
        click.echo(f"  {number}. {choice}", err=True)
    answer = str(click.prompt("choice", err=True)).strip()
    if answer.isdigit() and 1 <= int(answer) <= len(choices):
        return choices[int(answer) - 1]
    return answer


def _terminal_approver() -> Any:
    """The interactive approver of ``hermes_core.security``, or None (the headless default) without it."""
    import importlib

    try:
        factory = getattr(importlib.import_module("hermes_core.security"), "TerminalApprover", None)
    except ImportError:
        return None
    return factory() if factory is not None else None


@click.command("call", context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.argument("arguments", nargs=-1, type=click.UNPROCESSED)
@click.option("--toolset", "toolsets", multiple=True, metavar="T", help="Enable these toolsets for the call.")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the whole outcome (status, timing, error id) as JSON."
)
def call_command(name: str, arguments: tuple[str, ...], toolsets: tuple[str, ...], as_json: bool) -> None:
    """Run tool NAME like the model would and print the result the model would see.

    ARGUMENTS is one JSON object ('{"path": "README.md"}'), - to read that object from standard input,
    @FILE to read it from a file, or key=value pairs converted by the tool's schema: an argument that takes a
    string keeps the text as typed (command=true runs `true`), others are read as JSON (n=3 a number,
    flag=true a boolean, tags='["a"]' a list). An argument name the tool does not take is a usage error.
    On a terminal, dangerous actions ask for approval and tools may ask questions; otherwise anything needing
    approval is denied. The call runs in a session of its own that ends with the command: its shell state, its
    private /tmp and any background process it started end too. A call that takes more than a second shows a
    spinner and its elapsed time on stderr (a terminal only); Ctrl-C stops it (exit status 130).

    \b
    Exit status: 0 ok, 1 error, 3 blocked (a policy hook refused it), 4 denied (not approved),
    2 usage or configuration error.
    """
    from ._progress import PausingApprover, Progress

    state = get_state()
    progress = Progress(name)
    if sys.stdin.isatty() and not state.loaded and arguments != ("-",):
        approver = _terminal_approver()
        state.approver = PausingApprover(approver, progress) if approver is not None else None

        def ask(question: str, choices: Sequence[str] | None = None) -> str:
            with progress.paused():
                return terminal_ask_user(question, choices)

        state.ask_user = ask
    system = state.system()
    for toolset in toolsets:
        toolset_members(system, toolset)  # an unknown name is a usage error, not a failed call
    entry = system.registry.get(name)
    args = parse_call_arguments(arguments, entry.parameters if entry is not None else None)
    if entry is not None:
        check_argument_names(entry, args)
    # one session for this process: its shell and environment last as long as the command, and end with it
    session = f"cli-{os.getpid()}"
    try:
        with progress:  # a spinner and the elapsed time on stderr once the call takes more than a second
            outcome = system.call_outcome(name, args, enabled=list(toolsets) or None, session_id=session)
    finally:
        system.close_session(session)
    if as_json:
        emit_json(
            {
                "name": outcome.name,
                "status": outcome.status,
                "result": outcome.result,
                "duration_ms": round(outcome.duration_ms, 3),
                "error_kind": outcome.error_kind,
                "error_id": outcome.error_id,
                "truncated": outcome.truncated,
                "full_output_path": outcome.full_output_path,
            }
        )
    else:
        click.echo(outcome.result)
        if outcome.status != "ok":
            detail = f" ({outcome.error_kind})" if outcome.error_kind else ""
            click.echo(f"hermes: call {outcome.status}{detail}", err=True)
        if outcome.error_id:
            from ..paths import log_file

            click.echo(f"hermes: error id {outcome.error_id}: the details are in {log_file()}", err=True)
    click.get_current_context().exit(EXIT_CODES.get(outcome.status, 1))
