"""The child process of ``execute_code``: a bootstrap that sets up paths, then runs the script, in the session's
environment.

The child is ``python -I -B -X utf8 <dir>/_hermes_boot.py``, run in the session's environment
(``hermes_core.environments``; locally the sandbox): the workspace is its working directory, the private
directory (bootstrap, script and generated ``hermes_tools`` module) lies in the session's ``/tmp``, the tool
bridge's end is inherited (``pass_fds``), and the environment applies the limits (memory, processes, CPU time,
file size), the timeout and
the output caps to the whole process tree. Isolated mode ignores ``PYTHON*`` variables and the user site,
and leaves the script's directory off ``sys.path``, so the bootstrap puts the private directory first and
the workspace last. It flushes the script's output when it is sent SIGTERM and prints tracebacks without
its own frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes_core.environments import Environment

__all__ = ["BOOTSTRAP", "BOOT_NAME", "SCRIPT_NAME", "ScriptLimits", "ScriptRun", "run_script"]

BOOT_NAME = "_hermes_boot.py"
SCRIPT_NAME = "script.py"

BOOTSTRAP = r'''"""Bootstrap of an execute_code child: paths, then the script (see hermes_builtin)."""
import os
import signal
import sys

_PID = os.getpid()


def _on_term(signum, frame):
    if os.getpid() == _PID:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
    os._exit(128 + signum)


def _main():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "script.py"), encoding="utf-8") as fh:
        source = fh.read()
    signal.signal(signal.SIGTERM, _on_term)
    sys.path.insert(0, here)
    sys.path.append(os.getcwd())
    sys.argv = ["<script>"]
    import linecache
    import traceback
    import types

    linecache.cache["<script>"] = (len(source), None, source.splitlines(True), "<script>")
    main = types.ModuleType("__main__")
    sys.modules["__main__"] = main
    try:
        exec(compile(source, "<script>", "exec", dont_inherit=True), main.__dict__)
    except SystemExit:
        raise
    except BaseException as exc:
        tb = exc.__traceback__
        traceback.print_exception(type(exc), exc, tb.tb_next if tb is not None else None)
        sys.exit(1)


_main()
'''


@dataclass(frozen=True, slots=True)
class ScriptLimits:
    """Limits of one script run; ``max_processes`` counts the processes alive at once in its tree."""

    timeout: float
    memory_mb: int
    max_processes: int
    file_mb: int


@dataclass(slots=True)
class ScriptRun:
    """What the child did. ``exit_code`` is None when the sandbox ended it (timeout or a limit)."""

    exit_code: int | None
    stdout: str
    stderr: str
    stdout_omitted: int
    stderr_omitted: int
    timed_out: bool
    too_many_processes: bool
    leftovers_killed: bool
    kill_note: str
    duration: float


def run_script(
    environment: Environment,
    directory: str,
    *,
    limits: ScriptLimits,
    stdout_cap: int,
    stderr_cap: int,
    pass_fds: Sequence[int] = (),
) -> ScriptRun:
    """Run ``directory/script.py`` (a folder of ``environment``) through the bootstrap, in the workspace; never
    leaves processes behind."""
    from hermes_core.sandbox import Limits

    boot = f"{directory}/{BOOT_NAME}"
    environment.write(boot, BOOTSTRAP.encode("utf-8"), mode=0o600)
    argv = [environment.python, "-I", "-B", "-X", "utf8", boot]
    result = environment.run(
        argv,
        timeout=limits.timeout,
        limits=Limits(
            memory_mb=limits.memory_mb,
            max_processes=limits.max_processes,
            cpu_seconds=int(limits.timeout) + 5,
            max_file_mb=limits.file_mb,
            max_output_bytes=stdout_cap,
        ),
        tool="execute_code",
        split_output=True,
        stderr_bytes=stderr_cap,
        pass_fds=pass_fds,
    )
    return ScriptRun(
        exit_code=result.exit_code,
        stdout=result.stdout,
        stderr=result.stderr,
        stdout_omitted=result.omitted,
        stderr_omitted=result.stderr_omitted,
        timed_out=result.timed_out,
        too_many_processes=result.limit == "processes",
        leftovers_killed=result.leftovers_killed,
        kill_note=result.kill_note,
        duration=result.duration,
    )
