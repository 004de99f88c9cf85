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

import shlex
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["DEFAULT_OPTIONS_COMMAND", "WRAPPER", "ShellSession", "ShellState", "argv"]

_MAGIC = "HERMES-STATE-2"
# The shell's own variables (and per-process values) that are never saved or restored.
_SHELL_OWN = (
    "BASH*|_|PWD|OLDPWD|SHLVL|PPID|UID|EUID|GROUPS|HOSTNAME|HOSTTYPE|MACHTYPE|OSTYPE|PIPESTATUS|FUNCNAME|"
    "FUNCNEST|RANDOM|SRANDOM|SECONDS|LINENO|EPOCHSECONDS|EPOCHREALTIME|HISTCMD|HISTFILE|SHELLOPTS|OPTIND|"
    "OPTERR|OPTARG|DIRSTACK|COMP_*|IFS|PS4|COLUMNS|LINES|MAILCHECK|__hermes_*"
)
_PREFIXES = " ".join(f'"${{!{c}@}}"' for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")

WRAPPER = (
    r"""__hermes_c=$1 __hermes_i=${2-} __hermes_o=${3-}
set --
__hermes_dump() {
  { __hermes_e=$? __hermes_f=$-; set +eEuvx; } 2>/dev/null
  trap - EXIT
  unset -f __hermes_dump
  __hermes_k=()
  for __hermes_n in """
    + _PREFIXES
    + r"""; do
    case $__hermes_n in """
    + _SHELL_OWN
    + r""") ;; *) __hermes_k+=("$__hermes_n") ;; esac
  done
  {
    printf '%s\0%s\0%s\0%s\0' """
    + _MAGIC
    + r""" "$__hermes_e" "$PWD" "${__hermes_lost-}"
    for __hermes_n in "${__hermes_k[@]}"; do printf '%s\0' "$__hermes_n"; declare -p "$__hermes_n"; printf '\0'; done
    printf '\0'; declare -f; printf '\0'; alias -p; printf '\0'; shopt -p; set +o
    printf 'set -%s\0' "${__hermes_f//[^aefhkmnptuvxBCEHPT]/}"
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


# Prints the options of a fresh shell as the dump does (its flags line included), for ``default_options``.
DEFAULT_OPTIONS_COMMAND = "shopt -p; set +o; __f=$-; printf 'set -%s\\n' \"${__f//[^aefhkmnptuvxBCEHPT]/}\""


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
    """One command's dump, parsed."""

    exit_code: int
    cwd: str
    lost_cwd: bool
    variables: dict[str, str]
    functions: str
    aliases: str
    options: str


def parse_dump(data: bytes) -> Dump | None:
    """The dump a command wrote, or None when it is missing, cut or malformed."""
    parts = data.split(b"\0")
    if len(parts) < 9 or parts[0] != _MAGIC.encode():
        return None
    try:
        text = [p.decode("utf-8", "surrogateescape") for p in parts]
        exit_code = int(text[1])
    except ValueError:
        return None
    variables: dict[str, str] = {}
    at = 4
    while at + 1 < len(text) and text[at]:
        name, declaration = text[at], text[at + 1]
        if not name.replace("_", "a").isalnum() or not declaration.startswith("declare -"):
            return None
        variables[name] = declaration.rstrip("\n")
        at += 2
    rest = text[at + 1 :]
    if len(rest) < 4 or rest[3] != "":
        return None
    return Dump(exit_code, text[2], text[3] == "1", variables, rest[0], rest[1], rest[2])


def _flags(declaration: str) -> str:
    return declaration.split(" ", 2)[1] if declaration.count(" ") >= 1 else ""


class ShellSession:
    """The shell state of one session, on the host: what to send before a command and what to keep after it.

    ``cwd_check(path)`` returns the directory the session may keep for a path a command ended in (resolved: no
    link, no ``..``), or None when the session may not stay there; a command may end anywhere it can see, but the
    session then goes back to ``workspace``.
    ``default_options``: the lines ``shopt -p; set +o`` print in a fresh shell there (``DEFAULT_OPTIONS_COMMAND``
    run once), so only options a command changed are carried (fewer lines to replay before each command).
    """

    def __init__(
        self,
        workspace: str,
        cwd_check: Callable[[str], str | None],
        default_options: Iterable[str] = (),
    ) -> None:
        self.workspace = workspace
        self.cwd_check = cwd_check
        self.default_options = frozenset(default_options)
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
        options = parsed.options
        if self.default_options:
            options = "\n".join(
                line for line in options.splitlines() if line and line not in self.default_options
            )
        with self._lock:
            self.state = ShellState(cwd, variables, parsed.functions, parsed.aliases, options)
        return tuple(notes)

    def reset(self) -> None:
        """Forget everything: the next command starts in the workspace with the environment's defaults."""
        with self._lock:
            self.state = ShellState(cwd=self.workspace)
