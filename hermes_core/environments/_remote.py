"""The launch protocol of the kinds that run commands on another POSIX system (``container``, ``ssh``).

Every command runs under a small bash *launcher* (``launch_argv``), which is the session leader of what it
starts (``podman exec``/``docker exec`` and sshd both start each command in a session of its own):

1. it opens its *control channel* (a file descriptor of the transport, or a file) and writes
   ``HERMES-PID <pid>`` there, so the host can end the whole session later over another exec or channel
   (killing the local client leaves the remote command running);
2. it applies the call's limits with ``ulimit`` (data size, CPU time, file size) and merges stderr into stdout
   unless the output is wanted apart;
3. a shell command runs through ``SHELL_WRAPPER`` (``hermes_core.environments._shell``), in a subshell of the
   launcher (a fork, no second bash to start), with the session's restore script read from a file, or from
   stdin up to a NUL byte (then the rest of stdin is the command's); an argv runs as it is, in its working
   directory;
4. when the command exits, the launcher ends whatever it left running in its session (``kill -9``, counted)
   and writes ``HERMES-END <status> <leftovers>`` on the control channel.

``KILL_SCRIPT`` ends a session from outside: SIGTERM to every process of it, ``grace`` seconds, then SIGKILL.
Both scripts use bash builtins only (plus ``sleep`` while waiting), so they work in a minimal image.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._shell import WRAPPER

if TYPE_CHECKING:
    from ..sandbox import Limits

__all__ = [
    "KILL_SCRIPT",
    "LAUNCHER",
    "Control",
    "kill_argv",
    "kill_note",
    "launch_argv",
    "parse_control",
    "run_id",
]

# The processes of a session: field 6 of /proc/N/stat. Only the user's own processes are read (a session's are).
_SESSION_SCAN = r"""
__hermes_scan() {  # $1: session id, $2: signal (0: count only); sets __hermes_n to how many it reached
  local __hermes_sid=$1 __hermes_sig=$2 __hermes_p __hermes_s
  __hermes_n=0
  for __hermes_p in /proc/[0-9]*; do
    [ -O "$__hermes_p" ] || continue
    __hermes_p=${__hermes_p#/proc/}
    [ "$__hermes_p" = "$$" ] && continue
    { read -r __hermes_s < "/proc/$__hermes_p/stat"; } 2>/dev/null || continue
    __hermes_s=${__hermes_s##*) }
    set -f; set -- $__hermes_s; set +f
    [ "${4-}" = "$__hermes_sid" ] || continue
    kill -"$__hermes_sig" "$__hermes_p" 2>/dev/null && __hermes_n=$((__hermes_n + 1))
  done
}
"""

# The launcher's own variables are named __hermes_*: the session shell's dump leaves them out.
LAUNCHER = (
    r"""__hermes_lmode=$1 __hermes_lin=$2 __hermes_lout=$3 __hermes_lctl=$4 __hermes_lmerge=$5 __hermes_lcd=$6
__hermes_lprelude=$7 __hermes_lwrapper=$8
shift 8
case $__hermes_lctl in
'') exec 8>/dev/null ;;
*[!0-9]*) exec 8>>"$__hermes_lctl" ;;
*) eval "exec 8>&$__hermes_lctl" ;;
esac
printf 'HERMES-PID %s\n' "$$" >&8
eval "$__hermes_lprelude"
if [ "$__hermes_lin" = stdin ]; then exec 3<&0; __hermes_lin=3; fi
if [ "$__hermes_lmerge" = 1 ]; then exec 2>&1; fi
if [ "$__hermes_lmode" = shell ]; then
  (set -- "$1" "$__hermes_lin" "$__hermes_lout"; eval "$__hermes_lwrapper")
else
  [ "$__hermes_lin" = 3 ] && exec 3<&-
  if [ -n "$__hermes_lcd" ]; then cd -- "$__hermes_lcd" || exit 126; fi
  "$@" 8>&-
fi
__hermes_lrc=$?
"""
    + _SESSION_SCAN
    + r"""__hermes_scan "$$" 9
printf 'HERMES-END %s %s\n' "$__hermes_lrc" "$__hermes_n" >&8
exit "$__hermes_lrc"
"""
)

KILL_SCRIPT = (
    r"""__hermes_ksid=$1 __hermes_kgrace=$2
case $__hermes_ksid in ''|*[!0-9]*|0|1) echo "not a session: $__hermes_ksid" >&2; exit 2 ;; esac
"""
    + _SESSION_SCAN
    + r"""__hermes_scan "$__hermes_ksid" 0
[ "$__hermes_n" = 0 ] && { echo gone; exit 0; }
__hermes_scan "$__hermes_ksid" TERM
__hermes_kt=0
while [ "$__hermes_kt" -lt "$__hermes_kgrace" ]; do
  __hermes_scan "$__hermes_ksid" 0
  [ "$__hermes_n" = 0 ] && { echo term; exit 0; }
  sleep 0.1 2>/dev/null || sleep 1
  __hermes_kt=$((__hermes_kt + 1))
done
__hermes_scan "$__hermes_ksid" KILL
echo kill
"""
)

_PID = re.compile(rb"HERMES-PID (\d+)\n")
_END = re.compile(rb"HERMES-END (\d+) (\d+)\n\Z")


def run_id() -> str:
    """A fresh name for one command's files on the other side."""
    return secrets.token_hex(8)


def _prelude(limits: Limits | None, fds: Sequence[int]) -> str:
    """What the launcher runs first: the passed descriptors (which arrive as 3, 4, ...) moved back to their own
    numbers, and ``ulimit`` lines for the per-call limits a remote shell can apply. Numbers only: nothing else
    is interpolated into a script."""
    lines = [f"exec {200 + i}<&{3 + i} {3 + i}<&-" for i in range(len(fds))]
    lines += [f"exec {int(fd)}<&{200 + i} {200 + i}<&-" for i, fd in enumerate(fds)]
    if limits is None:
        return "\n".join(lines)
    if limits.memory_mb:
        lines.append(f"ulimit -d {int(limits.memory_mb) * 1024} 2>/dev/null")
    if limits.cpu_seconds:
        lines.append(f"ulimit -t {int(limits.cpu_seconds)} 2>/dev/null")
    if limits.max_file_mb:
        lines.append(f"ulimit -f {int(limits.max_file_mb) * 1024} 2>/dev/null")
    return "\n".join(lines)


def launch_argv(
    command: str | Sequence[str],
    *,
    state_in: str = "",
    state_out: str = "",
    control: str = "",
    merge: bool = True,
    workdir: str = "",
    limits: Limits | None = None,
    fds: Sequence[int] = (),
) -> list[str]:
    """The argv (run on the other side) that launches ``command`` (see the module docstring).

    ``state_in``: a path, ``"stdin"`` (the restore script comes first on stdin, ended by a NUL byte) or empty;
    ``state_out``: a path or a descriptor number for the shell's dump; ``control``: a path or a descriptor
    number (``"2"``: the transport's stderr, when ``merge`` sends the command's stderr to stdout); ``fds``: the
    host descriptor numbers the command must see, which the transport hands over as 3, 4, ...
    """
    head = ["bash", "--noprofile", "--norc", "-c", LAUNCHER, "hermes-run"]
    if isinstance(command, str):
        tail = [
            "shell",
            state_in,
            state_out,
            control,
            "1" if merge else "0",
            "",
            _prelude(limits, fds),
            WRAPPER,
        ]
        return [*head, *tail, command]
    argv = [str(a) for a in command]
    if not argv:
        raise ValueError("the command is empty")
    stdin = "stdin" if state_in == "stdin" else ""
    tail = ["argv", stdin, "", control, "1" if merge else "0", workdir, _prelude(limits, fds), ""]
    return [*head, *tail, *argv]


def kill_argv(session: int, grace: float) -> list[str]:
    """The argv that ends every process of ``session`` (SIGTERM, ``grace`` seconds, SIGKILL); it prints
    ``gone``, ``term`` or ``kill``."""
    steps = max(0, round(grace * 10))
    return ["bash", "--noprofile", "--norc", "-c", KILL_SCRIPT, "hermes-kill", str(int(session)), str(steps)]


def kill_note(printed: str) -> str:
    """What ``KILL_SCRIPT`` did, as ``Process.terminate`` says it."""
    word = printed.strip().splitlines()[-1] if printed.strip() else ""
    return {
        "gone": "already exited",
        "term": "terminated (SIGTERM)",
        "kill": "killed (SIGKILL after the grace period)",
    }.get(word, "killed")


@dataclass(frozen=True, slots=True)
class Control:
    """What a launcher wrote on its control channel: its pid (the session), the shell's dump when it went
    there too, and, once the command ended, its status and how many leftover processes were killed."""

    pid: int | None
    dump: bytes
    exit_code: int | None
    leftovers: int


def parse_control(data: bytes) -> Control:
    """Split a control channel's bytes (``HERMES-PID``, the dump when there is one, ``HERMES-END``)."""
    pid = None
    match = _PID.match(data)
    if match:
        pid = int(match.group(1))
        data = data[match.end() :]
    exit_code, leftovers = None, 0
    end = _END.search(data)
    if end:
        exit_code, leftovers = int(end.group(1)), int(end.group(2))
        data = data[: end.start()]
    return Control(pid, data, exit_code, leftovers)
