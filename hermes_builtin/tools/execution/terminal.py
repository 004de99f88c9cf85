"""The "terminal" toolset: ``terminal`` runs shell commands, ``process`` manages background ones.

Commands pass the command guard (and approval when dangerous), judged in the directory they run in; files
they redirect output into pass the path guard for writing. Then each command runs in the session's shell in
its environment (``hermes_core.environments``; locally the sandbox): the directory, variables, functions and
options it leaves persist for the session's next command, the workspace is all it can write, the host's
secrets and processes are out of reach, its output is capped (head and tail kept) and its whole process tree
ends at the timeout. Background processes keep a pipe or a terminal (``pty``) for input, and can notify the
session when they finish or print a watched line.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_core import CallContext, ToolError, ToolRegistry

from ._ready import shell_can_start

if TYPE_CHECKING:
    from hermes_core.environments import Environment

    from ._procs import BackgroundProcess, ProcessTable

__all__ = ["close_processes", "register", "scan_command", "write_targets"]

_TABLE_KEY = "terminal.processes"

DEFAULT_TIMEOUT = 180
MAX_TIMEOUT = 3600
DEFAULT_OUTPUT_CHARS = 40_000
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>"})
_HARMLESS_TARGETS = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/")

TERMINAL_SCHEMA: dict[str, Any] = {
    "name": "terminal",
    "description": (
        "Run a bash shell command; returns its output (stdout+stderr; head and tail if long) and exit code. "
        "cd, exports and venvs persist. stdin is closed: use -y. Only the workspace and /tmp are writable. "
        "Servers, long jobs, REPLs: background=true (pty=true for prompts), then use `process`."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "command": {"type": "string"},
            "workdir": {"type": "string"},
            "cwd": {"type": "string", "description": "= workdir."},
            "timeout": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_TIMEOUT,
                "description": f"Seconds (default {DEFAULT_TIMEOUT}).",
            },
            "background": {"type": "boolean"},
            "env": {"type": "object", "additionalProperties": {"type": "string"}},
            "pty": {"type": "boolean"},
            "notify_on_complete": {"type": "boolean"},
            "watch_patterns": {
                "type": "array",
                "items": {"type": "string", "maxLength": 200},
                "maxItems": 8,
                "description": "background: regexes; a matching line notifies.",
            },
        },
        "required": ["command"],
    },
}

PROCESS_SCHEMA: dict[str, Any] = {
    "name": "process",
    "description": (
        "Manage background processes started by terminal(background=true). Actions: list; poll (status, new "
        "output); log (all output: offset 1-based, default the last `limit` lines); wait (until exit, a watched "
        "line, or `timeout` s); write (send `data` as is; \\u0003 is Ctrl-C); submit (`data` plus Enter); "
        "close (end input, Ctrl-D); kill (with its children)."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {
                "type": "string",
                "enum": ["list", "poll", "log", "wait", "write", "submit", "close", "kill"],
            },
            "process_id": {"type": "string", "description": "From terminal (all but list)."},
            "data": {"type": "string"},
            "offset": {"type": "integer", "minimum": 1},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 2000,
                "description": "log/poll: max lines (default 200).",
            },
            "timeout": {
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_TIMEOUT,
                "description": "wait: seconds (default 60).",
            },
        },
        "required": ["action"],
    },
}


def _settings(context: CallContext) -> dict[str, Any]:
    try:
        cfg = context.plugin_config("terminal")
    except Exception:
        cfg = {}
    return cfg if isinstance(cfg, dict) else {}


def _default_memory_mb() -> int:
    try:
        phys = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // (1024 * 1024)
    except (ValueError, OSError):
        return 8192
    return int(max(512, min(8192, phys // 2)))


def _is_harmless(target: str) -> bool:
    return any(target == h or (h.endswith("/") and target.startswith(h)) for h in _HARMLESS_TARGETS)


_CD = frozenset({"cd", "pushd"})


def _walk_bashlex(node: Any, out: list[str], dirs: list[str]) -> None:
    kind = getattr(node, "kind", None)
    if kind == "redirect" and getattr(node, "type", None) in _WRITE_REDIRECTS:
        target: Any = getattr(node, "output", None)
        if getattr(target, "kind", None) == "word":
            out.append(target.word)
    if kind == "command":
        words = [p.word for p in node.parts if getattr(p, "kind", None) == "word"]
        _command_words(words, out, dirs)
    for attr in ("parts", "list", "command", "output"):
        child = getattr(node, attr, None)
        if isinstance(child, list):
            for item in child:
                _walk_bashlex(item, out, dirs)
        elif child is not None and hasattr(child, "kind") and attr != "output":
            _walk_bashlex(child, out, dirs)


def _command_words(words: list[str], out: list[str], dirs: list[str]) -> None:
    if not words:
        return
    name = os.path.basename(words[0])
    args = [w for w in words[1:] if not w.startswith("-")]
    if name == "tee":
        out.extend(args)
    elif name in _CD:
        dirs.append(args[0] if args else "~")


def _shlex_scan(command: str) -> tuple[list[str], list[str]]:
    import shlex

    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return [], ["$unknown"]
    out: list[str] = []
    dirs: list[str] = []
    words: list[str] = []
    skip = False
    for i, tok in enumerate(tokens):
        if skip:
            skip = False
            continue
        if tok in {"|", "||", "&&", ";", "&", "(", ")", ";;", "|&"}:
            _command_words(words, out, dirs)
            words = []
            continue
        if tok in _WRITE_REDIRECTS or tok.endswith(("&>", "&>>")):
            if i + 1 < len(tokens) and not tokens[i + 1].startswith("&"):
                out.append(tokens[i + 1])
                skip = True
            continue
        words.append(tok)
    _command_words(words, out, dirs)
    return out, dirs


def scan_command(command: str) -> tuple[list[str], list[str]]:
    """Best-effort ``(files written through > >> &> or tee, directories changed into with cd/pushd)``."""
    try:
        import bashlex  # type: ignore[import-untyped]

        found: list[str] = []
        dirs: list[str] = []
        for tree in bashlex.parse(command):
            _walk_bashlex(tree, found, dirs)
    except Exception:
        found, dirs = _shlex_scan(command)
    seen: list[str] = []
    for target in found:
        if target and not target.isdigit() and not _is_harmless(target) and target not in seen:
            seen.append(target)
    return seen, dirs


def write_targets(command: str) -> list[str]:
    """Best-effort list of the files a command line writes through ``>``, ``>>``, ``&>`` or ``tee``."""
    return scan_command(command)[0]


def _expand(word: str) -> str | None:
    """``~`` and ``$VARS`` expanded; None when the word still depends on the shell (substitutions, ``-``)."""
    if word == "-" or "$(" in word or "`" in word or "<(" in word or ">(" in word:
        return None
    expanded = os.path.expanduser(os.path.expandvars(word))
    return None if "$" in expanded else expanded


def _guard_writes(
    context: CallContext, command: str, workdir: Path, view: Callable[[str], str] = str
) -> None:
    """Send every file the command writes through the path guard, from each directory it may be in
    (``view``: the path the host's guard judges for a path of the environment)."""
    targets, dirs = scan_command(command)
    if not targets:
        return
    bases = [workdir]
    followable = True
    for d in dirs:
        expanded = _expand(d)
        if expanded is None:
            followable = False
            continue
        base = Path(expanded) if os.path.isabs(expanded) else workdir / expanded
        if base not in bases:
            bases.append(base)
    for target in targets:
        expanded = _expand(target)
        if expanded is None:
            context.request_approval(
                command, f"it writes to {target!r}, a path only the shell can work out", "command"
            )
            continue
        if os.path.isabs(expanded):
            context.guard_path(view(expanded), "write")
            continue
        if not followable:
            context.request_approval(
                command,
                f"it writes to {target!r} after changing to a directory that cannot be followed",
                "command",
            )
        for base in bases:
            context.guard_path(view(str(base / expanded)), "write")


def _start_dir(environment: Environment, where: str | None) -> str | None:
    """The directory a ``workdir`` names (relative: to the shell's current one), resolved; None for none."""
    from hermes_core.environments import PathOutsideRoots

    if where is None:
        return None
    if not where.strip() or "\x00" in where:
        raise ToolError("workdir is empty or contains a NUL byte")
    raw = environment.expand_user(where)
    if not raw.startswith("/"):
        raw = os.path.join(environment.cwd, raw)
    try:
        real = environment.resolve(os.path.normpath(raw))
        info = environment.stat(real)
    except PathOutsideRoots:
        raise ToolError(
            f"workdir {where!r} is outside the workspace: commands start only in the workspace, /tmp and the "
            "folders the configuration grants"
        ) from None
    except OSError:
        raise ToolError(f"workdir {where!r} is not an existing directory") from None
    if info.kind != "dir":
        raise ToolError(f"workdir {where!r} is not an existing directory")
    return real


def _table(context: CallContext) -> ProcessTable:
    from ._procs import ProcessTable

    table = context.session.stash(_TABLE_KEY, lambda: ProcessTable(Path(context.data_dir) / "processes"))
    cap = _settings(context).get("max_log_bytes")
    if isinstance(cap, int) and cap > 0:
        table.log_cap_bytes = cap
    return table


def _guarded_text(command: str, workdir: str, workspace: str) -> str:
    """The command as the guard must judge it: run from ``workdir``, so relative paths mean what they will."""
    import shlex

    if workdir == workspace:
        return command
    return f"cd -- {shlex.quote(str(workdir))} && {command}"


def _limits(settings: dict[str, Any], output_bytes: int) -> Any:
    from hermes_core.sandbox import Limits

    def positive(key: str, default: int | None = None) -> int | None:
        value = settings.get(key, default)
        if value is None:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ToolError(f"config [plugins.terminal] {key} must be a positive integer, not {value!r}")
        return value

    return Limits(
        memory_mb=positive("max_memory_mb", _default_memory_mb()),
        max_processes=positive("max_processes"),
        max_output_bytes=output_bytes,
    )


def terminal(
    command: str,
    workdir: str | None = None,
    cwd: str | None = None,
    timeout: int | None = None,
    background: bool = False,
    env: dict[str, str] | None = None,
    pty: bool = False,
    notify_on_complete: bool = False,
    watch_patterns: list[str] | None = None,
    *,
    context: CallContext,
) -> str:
    """Run ``command`` in the session's shell (see ``TERMINAL_SCHEMA``)."""
    from hermes_core.environments import environment_for

    if not command.strip():
        raise ToolError("command is empty")
    if "\x00" in command:
        raise ToolError("command contains a NUL byte")
    if len(command) > 100_000:
        raise ToolError("command is longer than 100000 characters; write a script file and run that instead")
    if not background and (pty or notify_on_complete or watch_patterns):
        raise ToolError("pty, notify_on_complete and watch_patterns are for background=true commands")
    environment = environment_for(context)
    start = _start_dir(environment, workdir if workdir is not None else cwd)
    here = start or environment.cwd
    view = environment.host_view
    context.guard_command(_guarded_text(command, view(here), view(environment.workspace)))
    _guard_writes(context, command, Path(here), view)
    settings = _settings(context)
    limit = int(settings.get("max_output_chars", DEFAULT_OUTPUT_CHARS))
    limits = _limits(settings, limit)
    if background:
        return _start_background(
            context, environment, command, start, here, env, limits, pty, notify_on_complete, watch_patterns
        )
    seconds = timeout if timeout is not None else int(settings.get("timeout", DEFAULT_TIMEOUT))
    seconds = _within_pipeline_limit(context, seconds)
    try:
        result = environment.run(
            command, workdir=start, env=env, timeout=seconds, limits=limits, tool="terminal"
        )
    except OSError as exc:
        raise ToolError(f"could not start the command: {exc.strerror or exc}") from None
    lines = [result.output.rstrip("\n")] if result.output.strip() else ["(no output)"]
    if result.timed_out:
        lines.append(
            f"[timed out after {seconds}s: the command and its children were {result.kill_note or 'killed'}. "
            "Use background=true for long-running commands.]"
        )
    elif result.limit == "processes":
        lines.append(
            f"[killed: the command started more than {_effective(context, limits).max_processes} processes at once "
            f"({result.kill_note})]"
        )
    elif result.limit == "disk":
        lines.append(
            f"[killed: the command filled the disk below the sandbox's floor of "
            f"{_effective(context, limits).min_free_mb} MB free ({result.kill_note})]"
        )
    else:
        lines.append(f"[exit code {result.exit_code}; {result.duration:.2f}s]")
    if result.limit == "memory":
        lines.append("[a process was killed for using more memory than the limit allows]")
    if result.leftovers_killed:
        lines.append(
            "[background children left by the command were killed; use background=true to keep them]"
        )
    if result.omitted:
        lines.append(f"[output capped: {result.omitted} bytes omitted from the middle]")
    if result.quarantined:
        lines.append(
            "[files the host would run later were planted and have been undone (the sandbox keeps them "
            "read-only; ask the user to make such changes): " + "; ".join(result.quarantined) + "]"
        )
    lines.extend(f"[{note}]" for note in result.notes)
    return "\n".join(lines)


def _effective(context: CallContext, limits: Any) -> Any:
    """The limits a command ran with: the configuration's, with the call's own on top."""
    from hermes_core.sandbox import sandbox_for

    return sandbox_for(context).limits(limits)


def _start_background(
    context: CallContext,
    environment: Environment,
    command: str,
    start: str | None,
    here: str,
    env: dict[str, str] | None,
    limits: Any,
    pty: bool,
    notify_on_complete: bool,
    watch_patterns: list[str] | None,
) -> str:
    from ._procs import Watch

    watch = None
    if watch_patterns:
        try:
            watch = Watch(watch_patterns)
        except Exception as exc:  # regex.error: a pattern that does not compile
            raise ToolError(f"watch_patterns: {exc}") from None
    table = _table(context)
    session = context.session

    def begin() -> Any:
        return environment.start(command, workdir=start, env=env, limits=limits, tool="terminal", pty=pty)

    try:
        bg = table.add(
            command,
            here,
            begin,
            notify=session.notify,
            notify_on_complete=notify_on_complete,
            watch=watch,
        )
    except OSError as exc:
        raise ToolError(f"could not start the command: {exc.strerror or exc}") from None
    extra = " with a terminal" if pty else ""
    return (
        f"started in the background{extra}: process_id={bg.id} (pid {bg.proc.pid}). Use process with action "
        '"poll", "log", "wait", "write", "submit", "close" or "kill" and this process_id.'
    )


def _within_pipeline_limit(context: CallContext, seconds: int) -> int:
    """``seconds``, lowered below a per-tool pipeline timeout the configuration sets, so the command is
    ended cleanly (with its output) before the pipeline gives up on the call."""
    host = context.host
    if host is None:
        return seconds
    cap = host.config.tool_limits(context.tool_name or "terminal").get("timeout")
    if isinstance(cap, int | float) and not isinstance(cap, bool) and cap > 0 and seconds > cap - 1:
        return max(1, int(cap) - 1)
    return seconds


def _require(table: ProcessTable, process_id: str | None) -> BackgroundProcess:
    if not process_id:
        raise ToolError("process_id is required for this action; use action 'list' to see them")
    bg = table.get(process_id)
    if bg is None:
        known = ", ".join(p.id for p in table.all()) or "none"
        raise ToolError(f"no background process {process_id!r} (known: {known})")
    return bg


def _lines(bg: BackgroundProcess) -> list[str]:
    from ._procs import clean_output

    data, _ = bg.spool.read()
    return clean_output(data.decode("utf-8", "replace")).splitlines()


def _format_log(bg: BackgroundProcess, offset: int | None, limit: int) -> str:
    lines = _lines(bg)
    total = len(lines)
    if offset is None:
        start = max(0, total - limit)
    else:
        start = offset - 1
        if start > total:
            raise ToolError(f"offset {offset} is past the end of the output ({total} lines)")
    page = [_clip(line) for line in lines[start : start + limit]]
    head = f"[{bg.id} {bg.status()['status']}; output lines {start + 1}-{start + len(page)} of {total}"
    if bg.spool.discarded:
        head += f"; {bg.spool.discarded} older bytes were discarded"
    head += "]"
    if start + len(page) < total:
        head += f" next page: offset={start + len(page) + 1}"
    return "\n".join([head, *page])


def _clip(line: str) -> str:
    return line if len(line) <= 2000 else line[:2000] + " ...[line truncated]"


def _format_new(bg: BackgroundProcess, limit: int) -> str:
    """What the process printed since the last read (its last ``limit`` lines when there is more)."""
    text, lost = bg.take_new()
    lines = text.splitlines()
    head = []
    if lost:
        head.append(f"[{lost} bytes printed since the last read were discarded (log cap)]")
    if len(lines) > limit:
        head.append(f"[{len(lines) - limit} earlier new lines not shown; use log with offset to page]")
        lines = lines[-limit:]
    if not lines and not lost:
        return "(no new output)"
    return "\n".join([*head, *(_clip(line) for line in lines)])


def _send(context: CallContext, bg: BackgroundProcess, data: str | None, action: str) -> str:
    import json
    import unicodedata

    if data is None:
        raise ToolError(f"{action} needs `data`: the text to send")
    if not bg.running:
        raise ToolError(f"process {bg.id} is not running any more; its input is gone")
    text = data + "\n" if action == "submit" else data
    judged = "".join(ch for ch in data if unicodedata.category(ch)[0] != "C").strip()
    if judged and _runs_a_shell(bg.command):  # a line typed into a shell is a command too
        context.guard_command(judged)
    try:
        if bg.proc.pty and action == "submit":
            bg.write(data.encode("utf-8", "surrogateescape") + b"\r")
        else:
            bg.write(text.encode("utf-8", "surrogateescape"))
    except OSError as exc:
        raise ToolError(f"could not write to process {bg.id}: {exc.strerror or exc}") from None
    bg.wait(0.3)  # a moment for the answer
    return json.dumps(bg.status()) + "\n" + _format_new(bg, 200)


_SHELLS = frozenset(
    {"bash", "sh", "dash", "zsh", "ksh", "fish", "tcsh", "csh", "busybox", "su", "sudo", "ssh"}
)


def _runs_a_shell(command: str) -> bool:
    """Whether the process reads shell commands (its input is judged like a command): a shell, su/sudo, ssh,
    or anything started through ``exec``/``env`` of one."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return True  # cannot tell: judge its input
    for word in words:
        name = os.path.basename(word)
        if "=" in word and not word.startswith("-") and name == word:
            continue  # VAR=value before the program
        if name in ("exec", "env", "command", "nohup", "setsid", "stdbuf", "script"):
            continue
        return name in _SHELLS
    return False


def process(
    action: str,
    process_id: str | None = None,
    data: str | None = None,
    offset: int | None = None,
    limit: int | None = None,
    timeout: int | None = None,
    *,
    context: CallContext,
) -> str:
    """List, read, drive, wait for or kill background processes (see ``PROCESS_SCHEMA``)."""
    import json

    table = _table(context)
    if action == "list":
        procs = [bg.status() for bg in table.all()]
        return json.dumps(procs, ensure_ascii=False) if procs else "no background processes"
    bg = _require(table, process_id)
    lines = limit or 200
    if action == "poll":
        return json.dumps(bg.status()) + "\n" + _format_new(bg, lines)
    if action == "log":
        return _format_log(bg, offset, lines)
    if action == "wait":
        seconds = 60 if timeout is None else timeout
        why = bg.wait(float(seconds), wake_on_match=True)
        note = {"timeout": f"still running after {seconds}s\n", "matched": "a watched line appeared\n"}
        return note.get(why, "") + json.dumps(bg.status()) + "\n" + _format_new(bg, lines)
    if action in ("write", "submit"):
        return _send(context, bg, data, action)
    if action == "close":
        try:
            bg.close_stdin()
        except OSError as exc:
            raise ToolError(f"could not close the input of {bg.id}: {exc.strerror or exc}") from None
        bg.wait(0.5)
        return json.dumps(bg.status()) + "\n" + _format_new(bg, lines)
    if action == "kill":
        what = bg.kill()
        return json.dumps({**bg.status(), "kill": what})
    raise ToolError(f"unknown action {action!r}; use list, poll, log, wait, write, submit, close or kill")


def close_processes(system: Any = None, session_id: str | None = None) -> None:
    """Kill the process trees of every background process of a session of ``system`` (default: its own)."""
    if system is not None:
        system.session(session_id).unstash(_TABLE_KEY)  # its cleanup kills them


def register(registry: ToolRegistry) -> None:
    """Register ``terminal`` and ``process`` (toolset "terminal")."""
    registry.register(
        name="terminal",
        toolset="terminal",
        schema=TERMINAL_SCHEMA,
        handler=terminal,
        check_fn=shell_can_start,
        emoji="💻",
        max_result_size_chars=60_000,
        timeout=MAX_TIMEOUT + 30,  # the command's own timeout (up to MAX_TIMEOUT) ends it first, cleanly
    )
    registry.register(
        name="process",
        toolset="terminal",
        schema=PROCESS_SCHEMA,
        handler=process,
        check_fn=shell_can_start,
        emoji="⚙️",
        max_result_size_chars=60_000,
        timeout=MAX_TIMEOUT + 30,  # "wait" may block up to MAX_TIMEOUT
    )
