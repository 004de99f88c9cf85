"""The "code_execution" toolset: ``execute_code`` runs a Python script that may call the other tools.

The script runs in a child Python (``-I`` isolated mode, see ``_code_sandbox``) in the session's environment
(``hermes_core.environments``; locally the sandbox): the workspace is all it can write besides the session's
``/tmp``, the host's secrets and processes are out of reach, its environment is scrubbed, and memory, CPU
time, file size, processes, a wall-clock timeout and stdout/stderr caps apply to its whole process tree. With
the local kind and bwrap, a session's scripts are forks of one warm interpreter inside the walls
(``_code_warm``); otherwise each gets a Python of its own. It reaches the tools through a generated
``hermes_tools`` module over an inherited socket pair (``_code_bridge``); every such call goes through the
caller's pipeline (validation, hooks, guards, approvals), limited to the tools enabled for the model in this
conversation, minus ``execute_code`` and ``clarify``.

Security choice: a script can do what a shell can (``os.system``, ``subprocess``), and Python cannot be
put through the command guard. So ``execute_code`` is never more powerful than ``terminal``: it runs only
when ``terminal`` is enabled for the conversation (its description says so otherwise), under the same
kind of sandbox. Operators who want a human to see every script set ``[approvals] code = "ask"``; the
approval then binds to the SHA-256 of the exact script. Limits are read from ``[plugins.code_execution]``:
``timeout``, ``max_memory_mb``, ``max_processes``, ``max_file_mb``, ``max_tool_calls``,
``max_stdout_chars``, ``max_stderr_chars``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_core import ApprovalDenied, CallContext, ToolError, ToolRegistry, Unavailable

from ._ready import commands_can_start

if TYPE_CHECKING:
    from hermes_core import Host
    from hermes_core.environments import Environment

    from ._code_bridge import ToolBridge
    from ._code_sandbox import ScriptRun

__all__ = ["SCHEMA", "callable_tools", "execute_code", "register"]

TOOLSET = "code_execution"
DEFAULT_TIMEOUT = 60
MAX_TIMEOUT = 600
MAX_CODE_CHARS = 200_000
NOT_FOR_SCRIPTS = frozenset({"execute_code", "clarify"})
DEFAULTS: dict[str, int] = {
    "timeout": DEFAULT_TIMEOUT,
    "max_memory_mb": 1024,
    "max_processes": 64,
    "max_file_mb": 1024,
    "max_tool_calls": 50,
    "max_stdout_chars": 50_000,
    "max_stderr_chars": 10_000,
}

_DESCRIPTION = (
    "Run a Python 3 script in a sandboxed child process (cwd: the workspace); returns its stdout, stderr, "
    "exit code and tool calls. Print what you need (output is capped). In it, `from hermes_tools import "
    "read_file` (any tool listed) or `call(name, **kwargs)` runs a tool, returning its result string: chain "
    "many tool calls in one step. Limits: `timeout`, memory, processes, {calls} tool calls."
)

SCHEMA: dict[str, Any] = {
    "name": "execute_code",
    "description": _DESCRIPTION.format(calls=DEFAULTS["max_tool_calls"]),
    "parameters": {
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "The Python script."},
            "timeout": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_TIMEOUT,
                "description": f"Seconds (default {DEFAULT_TIMEOUT}).",
            },
        },
        "required": ["code"],
        "additionalProperties": False,
    },
}

# The listing of callable tools is cut to this many characters so the definition stays under 1,000 however many
# tools are enabled; the script's ``hermes_tools.TOOLS`` always lists them all. Cut, it names these first.
LISTING_CHARS = 250
_FIRST = (
    "terminal", "process", "read_file", "write_file", "patch", "search_files", "web_search", "web_extract",
    "memory", "session_search", "todo", "vision_analyze", "delegate_task",
)  # fmt: skip


def callable_tools(available: frozenset[str] | set[str]) -> frozenset[str]:
    """The tools a script may call when the model may use ``available``."""
    return frozenset(available) - NOT_FOR_SCRIPTS


def listing(tools: frozenset[str]) -> str:
    """The callable tools as the description names them: all, or as many as fit in ``LISTING_CHARS``."""
    if not tools:
        return ""
    names = sorted(tools)
    text = f" Tools the script can call: {', '.join(names)}."
    if len(text) <= LISTING_CHARS:
        return text
    ordered = [n for n in _FIRST if n in tools] + [n for n in names if n not in _FIRST]
    head = " Tools the script can call: "
    tail = f" and {len(tools)} more (hermes_tools.TOOLS)."  # the longest tail: the count only shrinks
    room = LISTING_CHARS - len(head) - len(tail)
    shown: list[str] = []
    for name in ordered:
        room -= len(name) + (2 if shown else 0)
        if room < 0:
            break
        shown.append(name)
    if not shown:
        return f" The script can call {len(tools)} tools (hermes_tools.TOOLS)."
    return f"{head}{', '.join(shown)} and {len(tools) - len(shown)} more (hermes_tools.TOOLS)."


def _schema_overrides(available: frozenset[str]) -> dict[str, Any]:
    if "terminal" not in available:
        return {
            "description": "Unavailable in this conversation: execute_code runs only where the terminal tool is enabled."
        }
    return {"description": SCHEMA["description"] + listing(callable_tools(available))}


def _check(system: Any) -> tuple[bool, str] | Unavailable:
    import sys

    # every POSIX system has Unix sockets: asking the socket module would load its C extension (~1 ms) at start-up
    if not (os.name == "posix" and sys.executable):
        return False, "execute_code needs a POSIX system with Unix sockets and a Python interpreter"
    return commands_can_start(system)


def _settings(context: CallContext) -> dict[str, int]:
    try:
        raw = context.plugin_config(TOOLSET)
    except Exception:
        raw = {}
    settings = dict(DEFAULTS)
    for key, value in (raw if isinstance(raw, dict) else {}).items():
        if key not in DEFAULTS:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ToolError(f"config [plugins.{TOOLSET}] {key} must be a positive integer, not {value!r}")
        settings[key] = value
    return settings


def _approve(context: CallContext, code: str) -> None:
    """Ask a human first when ``[approvals] code`` is "ask" (any value but "run"/false asks: fail closed)."""
    import hashlib

    approvals = context.host.config.approvals if context.host is not None else {}
    mode = approvals.get("code", "run")
    if mode in ("run", False):
        return
    digest = hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()
    lines = code.count("\n") + 1
    preview = code if len(code) <= 4000 else code[:4000] + f"\n... ({len(code) - 4000} more characters)"
    try:
        context.request_approval(
            f"python script sha256:{digest}", f"runs a Python script ({lines} lines):\n{preview}", "code"
        )
    except ApprovalDenied:
        raise ApprovalDenied("running this script needs a human's approval and was not approved") from None


def _private_dir(environment: Environment) -> str:
    """A fresh folder in the session's temporary folder (its ``/tmp``) for one script run."""
    import secrets

    directory = f"{environment.temp_dir.rstrip('/')}/hermes-code-{secrets.token_hex(6)}"
    environment.write_text(f"{directory}/.keep", "", mode=0o600, sync=False)  # scratch: no wait for the disk
    return directory


def _notes(
    run: ScriptRun, bridge: ToolBridge, settings: dict[str, int], seconds: int, busy: bool
) -> list[str]:
    import signal

    notes = []
    if run.timed_out:
        notes.append(
            f"timed out after {seconds}s: the script and its child processes were {run.kill_note or 'killed'}"
        )
    if run.too_many_processes:
        notes.append(f"killed: the script started more than {settings['max_processes']} processes at once")
    sig = 0
    if run.exit_code is not None and run.exit_code < 0:
        sig = -run.exit_code
    elif run.exit_code is not None and 128 < run.exit_code <= 128 + 64:
        sig = run.exit_code - 128  # the sandbox reports a signal as 128+N, as a shell does
    if sig:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        extra = " (CPU time limit)" if name == "SIGXCPU" else ""
        notes.append(f"the script was killed by {name}{extra}")
    if run.leftovers_killed:
        notes.append("child processes left running by the script were killed")
    if run.stdout_omitted:
        notes.append(f"stdout capped: {run.stdout_omitted} bytes omitted from the middle")
    if run.stderr_omitted:
        notes.append(f"stderr capped: {run.stderr_omitted} bytes omitted from the middle")
    if bridge.over_limit:
        notes.append(
            f"{bridge.over_limit} tool calls refused: the limit is {settings['max_tool_calls']} per script"
        )
    if bridge.bad_requests:
        notes.append(f"{bridge.bad_requests} malformed or unauthenticated bridge requests were refused")
    if busy:
        notes.append("a tool call was still running when the script ended; it finishes on its own")
    return notes


def _write_files(environment: Environment, directory: str, code: str, bridge: ToolBridge, host: Host) -> None:
    """The script and the ``hermes_tools`` module for it, readable by this user only."""
    from ._code_bridge import MODULE_NAME, module_source
    from ._code_sandbox import SCRIPT_NAME

    descriptions = {}
    for name in bridge.allowed:
        entry = host.tool(name)
        descriptions[name] = entry.description if entry is not None else ""
    module = module_source(bridge.child_fd, bridge.token, descriptions)
    # scratch files of one run, removed after it: written atomically, without waiting for the disk
    environment.write_text(f"{directory}/{MODULE_NAME}.py", module, mode=0o600, sync=False)
    raw = code.encode("utf-8", "surrogatepass").decode(
        "latin-1"
    )  # its bytes as they are, lone surrogates too
    environment.write_text(f"{directory}/{SCRIPT_NAME}", raw, mode=0o600, sync=False, encoding="latin-1")


def _clean_up(environment: Environment, directory: str) -> None:
    import contextlib

    with contextlib.suppress(OSError):
        for name in environment.listdir(directory):
            with contextlib.suppress(OSError):
                environment.remove(f"{directory}/{name}")
        environment.remove(directory)


def execute_code(code: str, timeout: int | None = None, *, context: CallContext) -> str:
    """Run ``code`` (see ``SCHEMA``); returns JSON with exit_code, stdout, stderr, tool_calls, timed_out."""
    import json

    from hermes_core.environments import environment_for

    from ._code_bridge import ToolBridge
    from ._code_sandbox import ScriptLimits, run_script
    from ._code_warm import warm_runner

    host = context.host
    if host is None:
        raise ToolError("execute_code needs a tool system to route the script's tool calls")
    if not code.strip():
        raise ToolError("code is empty")
    if len(code) > MAX_CODE_CHARS:
        raise ToolError(f"code is longer than {MAX_CODE_CHARS} characters; write it to a file and run that")
    enabled = context.enabled if context.enabled is not None else host.available()
    if "terminal" not in enabled:
        raise ToolError(
            "execute_code can do anything a shell can, so it runs only where the terminal tool is enabled; "
            "it is not enabled in this conversation"
        )
    settings = _settings(context)
    _approve(context, code)
    allowed = callable_tools(enabled)
    nested = tuple(sorted(allowed))
    seconds = min(timeout if timeout is not None else settings["timeout"], MAX_TIMEOUT)
    prefix = context.call_id or "code"

    def runner(tool: str, arguments: dict[str, Any], number: int) -> tuple[str, str]:
        outcome = host.call_outcome(
            tool,
            arguments,
            enabled=nested,
            session_id=context.session_id,
            call_id=f"{prefix}.{number}",
            approver=context.approver,
        )
        return outcome.status, outcome.result

    environment = environment_for(context)
    try:
        directory = _private_dir(environment)
    except OSError as exc:
        raise ToolError(f"could not prepare the script's folder: {exc.strerror or exc}") from None
    try:
        bridge = ToolBridge(Path(directory), runner, allowed, settings["max_tool_calls"])
        try:
            _write_files(environment, directory, code, bridge, host)
        except BaseException:
            bridge.stop(0)
            raise
        limits = ScriptLimits(
            timeout=float(seconds),
            memory_mb=settings["max_memory_mb"],
            max_processes=settings["max_processes"],
            file_mb=settings["max_file_mb"],
        )
        bridge.start()
        caps = {"stdout_cap": settings["max_stdout_chars"], "stderr_cap": settings["max_stderr_chars"]}
        try:  # the session's warm interpreter, else a sandbox and a Python of its own (see _code_warm)
            run = warm_runner(context).run(
                environment, directory, limits=limits, bridge_fd=bridge.child_fd, **caps
            )
            if run is None:
                run = run_script(environment, directory, limits=limits, pass_fds=[bridge.child_fd], **caps)
        except OSError as exc:
            raise ToolError(f"could not start Python: {exc.strerror or exc}") from None
        finally:
            busy = bridge.stop()
    finally:
        _clean_up(environment, directory)
    result: dict[str, Any] = {
        "exit_code": run.exit_code,
        "timed_out": run.timed_out,
        "duration_ms": round(run.duration * 1000),
        "stdout": run.stdout,
        "stderr": run.stderr,
        "tool_calls": bridge.calls(),
    }
    notes = _notes(run, bridge, settings, seconds, busy)
    if notes:
        result["notes"] = notes
    return json.dumps(result, ensure_ascii=False)


def register(registry: ToolRegistry) -> None:
    """Register ``execute_code`` (toolset "code_execution")."""
    registry.register(
        name="execute_code",
        toolset=TOOLSET,
        schema=SCHEMA,
        handler=execute_code,
        check_fn=_check,
        emoji="🐍",
        max_result_size_chars=100_000,
        dynamic_schema_overrides=_schema_overrides,
        timeout=MAX_TIMEOUT + 30,
    )
