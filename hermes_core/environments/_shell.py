"""The session shell: how a fresh ``bash`` per command still remembers the session's directory, variables,
functions, aliases and options, in any kind of environment.

Each shell command runs as ``bash --noprofile --norc -c WRAPPER hermes-shell COMMAND STATE_IN STATE_OUT``. The
wrapper reads the restore script from ``STATE_IN`` (a file descriptor number or a path; empty: nothing to
restore) and evaluates it, runs ``COMMAND`` in the same shell, and then (also when the command calls ``exit``)
writes what it left to ``STATE_OUT``: its exit status, ``$PWD``, every variable that is not the shell's own
(``declare -p``, one record each), functions, aliases and options. Only bash builtins run around the command,
so the state costs about a millisecond. A kind chooses the transport (memfds inherited through the sandbox for
the local kind; files or stdin for remote ones); ``ShellSession`` does the rest on the host.

Nothing from the dump is run on the host: it is parsed, the working directory is checked against what the
kind allows (``cwd_allowed``), and the text goes back into the next command's own shell only. A command that is
killed (timeout, a limit) leaves no dump worth reading: the session keeps the state it had before it.
"""

from __future__ import annotations

import re
import shlex
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["DEFAULT_OPTIONS_COMMAND", "WRAPPER", "ShellSession", "ShellState", "argv"]

_MAGIC = "HERMES-STATE-3"
# The shell's own variables (and per-process values) that are never saved or restored.
_SHELL_OWN = re.compile(
    r"BASH.*|_|PWD|OLDPWD|SHLVL|PPID|UID|EUID|GROUPS|HOSTNAME|HOSTTYPE|MACHTYPE|OSTYPE|PIPESTATUS|FUNCNAME|"
    r"FUNCNEST|RANDOM|SRANDOM|SECONDS|LINENO|EPOCHSECONDS|EPOCHREALTIME|HISTCMD|HISTFILE|SHELLOPTS|OPTIND|"
    r"OPTERR|OPTARG|DIRSTACK|COMP_.*|IFS|PS4|COLUMNS|LINES|MAILCHECK|__hermes_.*"
)

WRAPPER = (
    r"""__hermes_c=$1 __hermes_i=${2-} __hermes_o=${3-}
set --
__hermes_dump() {
  { __hermes_e=$? __hermes_so=$SHELLOPTS; set +eEuvx; } 2>/dev/null
  trap - EXIT
  unset -f __hermes_dump
  {
    printf '%s\0' """
    + _MAGIC
    + r""" "$__hermes_e" "$PWD" "${__hermes_lost-}" "$__hermes_so" "$BASHOPTS"
    declare -p; printf '\0'; declare -f; printf '\0'; alias -p; printf '\0'
  } 2>/dev/null >&"$__hermes_w"
  exit "$__hermes_e"
}
if [ -n "$__hermes_i" ]; then
  case $__hermes_i in
  *[!0-9]*) IFS= read -r -d '' __hermes_s <"$__hermes_i" ;;
  *) IFS= read -r -d '' -u "$__hermes_i" __hermes_s; eval "exec $__hermes_i<&-" ;;
  esac
  eval "$__hermes_s" 2>/dev/null
  unset __hermes_s
fi
if [ -n "$__hermes_o" ]; then
  case $__hermes_o in
  *[!0-9]*) exec {__hermes_w}>|"$__hermes_o" ;;
  *) __hermes_w=$__hermes_o ;;
  esac
  trap __hermes_dump EXIT
else
  unset -f __hermes_dump
fi
unset __hermes_i __hermes_o
eval "$__hermes_c"
"""
)


# Prints the options of a fresh shell (``$SHELLOPTS`` and ``$BASHOPTS``, one a line), for ``default_options``.
DEFAULT_OPTIONS_COMMAND = 'printf "%s\\n%s\\n" "$SHELLOPTS" "$BASHOPTS"'


def argv(command: str, state_in: str = "", state_out: str = "") -> list[str]:
    """The argv that runs ``command`` in the session shell (``state_in``/``state_out``: fd numbers or paths)."""
    return ["bash", "--noprofile", "--norc", "-c", WRAPPER, "hermes-shell", command, state_in, state_out]


@dataclass(frozen=True, slots=True)
class ShellState:
    """What a session's shell carries from one command to the next (``variables``: name -> declaration)."""

    cwd: str
    variables: Mapping[str, str] = field(default_factory=dict)
    functions: str = ""
    aliases: str = ""
    options: str = ""


@dataclass(frozen=True, slots=True)
class Dump:
    """One command's dump, parsed (``shellopts``/``bashopts``: the enabled ``set -o`` and ``shopt`` options)."""

    exit_code: int
    cwd: str
    lost_cwd: bool
    shellopts: frozenset[str]
    bashopts: frozenset[str]
    variables: dict[str, str]
    functions: str
    aliases: str


def parse_dump(data: bytes) -> Dump | None:
    """The dump a command wrote, or None when it is missing, cut or malformed."""
    parts = data.split(b"\0")
    if len(parts) != 10 or parts[0] != _MAGIC.encode() or parts[9] != b"":
        return None
    try:
        text = [p.decode("utf-8", "surrogateescape") for p in parts]
        exit_code = int(text[1])
    except ValueError:
        return None
    declared = split_declarations(text[6])
    if declared is None:
        return None
    variables = {name: decl for name, decl in declared.items() if not _SHELL_OWN.fullmatch(name)}
    return Dump(
        exit_code, text[2], text[3] == "1", _options(text[4]), _options(text[5]), variables, text[7], text[8]
    )


def split_declarations(text: str) -> dict[str, str] | None:
    """``declare -p``'s output as ``{name: its declaration}``, or None when it is not what bash prints.

    Values are skipped, not decoded: double-quoted (backslash escapes), ``$'...'`` (bash 5.2 for control
    characters) or arrays ``([key]=value ...)``; older bash prints newlines raw inside quotes, which a line split
    would cut, so the scan follows the quoting.
    """
    out: dict[str, str] = {}
    at, end = 0, len(text)
    try:
        while at < end:
            if text[at] == "\n":
                at += 1
                continue
            if not text.startswith("declare -", at):
                return None
            start = at
            at = text.index(" ", at + 9) + 1
            first = at
            while at < end and (text[at].isalnum() or text[at] == "_"):
                at += 1
            name = text[first:at]
            if not name:
                return None
            if at < end and text[at] == "=":
                at = _skip_value(text, at + 1)
            if at < end and text[at] != "\n":
                return None
            out[name] = text[start:at]
    except (IndexError, ValueError):
        return None
    return out


def _skip_value(text: str, at: int) -> int:
    if text.startswith("$'", at):
        return _skip_quoted(text, at + 2, "'")
    if text[at] == '"':
        return _skip_quoted(text, at + 1, '"')
    if text[at] == "(":
        at += 1
        while True:
            while text[at] == " ":
                at += 1
            if text[at] == ")":
                return at + 1
            if text[at] != "[":
                raise ValueError("an array element without a key")
            at = _skip_value(text, at + 1) if text[at + 1] in '"$' else text.index("]", at)
            if text[at] != "]" or text[at + 1] != "=":
                raise ValueError("an array key without =")
            at = _skip_value(text, at + 2)
    while at < len(text) and text[at] not in " \n":
        at += 1
    return at


def _skip_quoted(text: str, at: int, quote: str) -> int:
    while text[at] != quote:
        at += 2 if text[at] == "\\" else 1
    return at + 1


def _options(listing: str) -> frozenset[str]:
    return frozenset(o for o in listing.split(":") if o.replace("-", "").replace("_", "").isalnum())


def options_script(shellopts: frozenset[str], bashopts: frozenset[str], defaults: tuple[str, str]) -> str:
    """The ``set -o``/``shopt`` lines that turn a fresh shell's options (``defaults``: its ``$SHELLOPTS`` and
    ``$BASHOPTS``) into these."""
    base_set, base_shopt = _options(defaults[0]), _options(defaults[1])
    lines = []
    if shellopts - base_set:
        lines.append("set" + "".join(f" -o {o}" for o in sorted(shellopts - base_set)))
    if defaults[0] and base_set - shellopts:
        lines.append("set" + "".join(f" +o {o}" for o in sorted(base_set - shellopts)))
    if bashopts - base_shopt:
        lines.append("shopt -s " + " ".join(sorted(bashopts - base_shopt)))
    if defaults[1] and base_shopt - bashopts:
        lines.append("shopt -u " + " ".join(sorted(base_shopt - bashopts)))
    return "\n".join(lines)


def _flags(declaration: str) -> str:
    return declaration.split(" ", 2)[1] if declaration.count(" ") >= 1 else ""


class ShellSession:
    """The shell state of one session, on the host: what to send before a command and what to keep after it.

    ``cwd_check(path)`` returns the directory the session may keep for a path a command ended in (resolved: no
    link, no ``..``), or None when the session may not stay there; a command may end anywhere it can see, but the
    session then goes back to ``workspace``.
    ``default_options``: what ``DEFAULT_OPTIONS_COMMAND`` prints in a fresh shell there (run once), so only the
    options a command changed are replayed (without it, enabled options are restored, disabled defaults not).
    """

    def __init__(
        self,
        workspace: str,
        cwd_check: Callable[[str], str | None],
        default_options: tuple[str, str] = ("", ""),
    ) -> None:
        self.workspace = workspace
        self.cwd_check = cwd_check
        self.default_options = default_options
        self.state = ShellState(cwd=workspace)
        self._lock = threading.Lock()

    @property
    def cwd(self) -> str:
        return self.state.cwd

    def restore_script(
        self, *, workdir: str | None = None, base_names: Iterable[str] = (), call_env: Mapping[str, str] = {}
    ) -> bytes:
        """The script a command's shell evaluates first (``STATE_IN``).

        ``base_names``: the variables the command's process starts with (those the session unset are unset
        again); ``call_env``: this command's own variables, which win over the session's for this command.
        """
        state = self.state
        lines: list[str] = []
        if state.variables:
            gone = sorted(n for n in base_names if n not in state.variables and n not in call_env)
            if gone:
                lines.append("unset -v " + " ".join(gone))
            lines.extend(decl for name, decl in state.variables.items() if name not in call_env)
            unexported = sorted(
                n for n in base_names if n in state.variables and "x" not in _flags(state.variables[n])
            )
            if unexported:
                lines.append("export -n " + " ".join(unexported))
        if state.functions:
            lines.append(state.functions)
        if state.aliases:
            lines.append(state.aliases)
        target = workdir or state.cwd
        lines.append(f"cd -- {shlex.quote(target)} || __hermes_lost=1")
        if state.options:
            lines.append(state.options)  # last: `set -e` or `set -u` must not trip the lines above
        return ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")

    def update(
        self,
        dump: bytes,
        *,
        workdir: str | None = None,
        killed: bool = False,
        call_env: Mapping[str, str] = {},
    ) -> tuple[str, ...]:
        """Keep what the command left (``dump``) as the session's state; returns notes for the model."""
        before = self.state
        if killed:
            return ("the session's shell state (directory, variables) is as it was before this command",)
        parsed = parse_dump(dump)
        if parsed is None:
            return (
                "the shell's state after this command could not be read (it replaced the shell with exec, "
                "closed hermes's descriptor or changed the EXIT trap); the session keeps its state from before",
            )
        notes: list[str] = []
        variables = dict(parsed.variables)
        for name in call_env:  # this command's own variables never become the session's
            if name in before.variables:
                variables[name] = before.variables[name]
            else:
                variables.pop(name, None)
        cwd = parsed.cwd
        if workdir is not None and cwd == workdir:
            cwd = before.cwd  # `workdir` is for this command; the session stays where it was
        if parsed.lost_cwd and workdir is None:
            notes.append(f"the session's directory {before.cwd} no longer existed; this command ran in {cwd}")
        kept = self.cwd_check(cwd) if cwd.startswith("/") and "\n" not in cwd else None
        if kept is None:
            notes.append(
                f"the command ended in {cwd}, outside the workspace and the folders a session may stay in; "
                f"the next command starts in {self.workspace}"
            )
            kept = self.workspace
        cwd = kept
        options = options_script(parsed.shellopts, parsed.bashopts, self.default_options)
        with self._lock:
            self.state = ShellState(cwd, variables, parsed.functions, parsed.aliases, options)
        return tuple(notes)

    def reset(self) -> None:
        """Forget everything: the next command starts in the workspace with the environment's defaults."""
        with self._lock:
            self.state = ShellState(cwd=self.workspace)
