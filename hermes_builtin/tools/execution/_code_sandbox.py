"""The child process of ``execute_code``: a bootstrap that sets up paths, then runs the script, in the session's
environment.

The child is ``python -I -B -X utf8 <dir>/_hermes_boot.py``, run in the session's environment
(``hermes_core.environments``; locally the sandbox): the workspace is its working directory, the private
directory (bootstrap, script and generated ``hermes_tools`` module) lies in the session's ``/tmp``, the tool
bridge's end is inherited (``pass_fds``), and the environment applies the limits (memory, processes, CPU time,
file size), the timeout and the output caps to the whole process tree. Isolated mode ignores ``PYTHON*``
variables and the user site, and leaves the script's directory off ``sys.path``, so the bootstrap puts the
private directory first and the workspace last. It flushes the script's output when it is sent SIGTERM and
prints tracebacks without its own frame.

Start-up is most of what a short script costs, so where the environment runs the very Python that runs hermes
(the local kind) the bootstrap is lean: ``-S`` skips ``site`` (whose ``.pth`` files, editable-install finders and
distutils hack can cost more than the interpreter's own start) and the bootstrap puts that Python's
site-packages on ``sys.path`` itself; an import that still finds nothing runs ``site``'s ``.pth`` processing
once and tries again, so a package that needs it imports as before. ``exit``, ``quit`` and ``help`` are there
as with ``site``, ``sys.prefix`` is the virtual environment's. Until a traceback is printed, the bootstrap
imports nothing the interpreter has not loaded already (``_signal``, not ``signal``, which pulls in ``enum``).
The session's warm interpreter (``_code_warm``) runs the same bootstrap in a forked child.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes_core.environments import Environment

__all__ = [
    "BOOTSTRAP",
    "BOOT_NAME",
    "SCRIPT_NAME",
    "ScriptLimits",
    "ScriptRun",
    "bootstrap_source",
    "lean",
    "run_script",
    "site_dirs",
    "write_bootstrap",
]

BOOT_NAME = "_hermes_boot.py"
SCRIPT_NAME = "script.py"

BOOTSTRAP = r'''"""Bootstrap of an execute_code child: paths, then the script (see hermes_builtin)."""
import os
import sys

_PID = os.getpid()
_SITE_DIRS = {site_dirs!r}  # None: site ran as usual (no -S)
if _SITE_DIRS is not None:
    sys.prefix, sys.exec_prefix = {prefixes!r}  # what site would set for a virtual environment


def _on_term(signum, frame):
    if os.getpid() == _PID:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
    os._exit(128 + signum)


class _LateSite:
    """Last on sys.meta_path: an import nothing else found runs site's .pth processing once, then again."""

    done = False

    def find_spec(self, name, path=None, target=None):
        if _LateSite.done:
            return None
        _LateSite.done = True
        import site

        for directory in _SITE_DIRS:
            site.addsitedir(directory)
        for finder in sys.meta_path:
            if finder is not self and hasattr(finder, "find_spec"):
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    return spec
        return None


def _quit(code=None):
    raise SystemExit(code)


def _help(*args, **kwargs):
    import pydoc

    return pydoc.help(*args, **kwargs)


def _main():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "script.py"), encoding="utf-8") as fh:
        source = fh.read()
    import _signal

    _signal.signal(_signal.SIGTERM, _on_term)
    sys.path.insert(0, here)
    if _SITE_DIRS is not None:
        sys.path.extend(d for d in _SITE_DIRS if d not in sys.path)
        sys.meta_path.append(_LateSite())
        import builtins

        builtins.exit = builtins.quit = _quit
        builtins.help = _help
    sys.path.append(os.getcwd())
    sys.argv = ["<script>"]
    main = type(sys)("__main__")
    sys.modules["__main__"] = main
    try:
        exec(compile(source, "<script>", "exec", dont_inherit=True), main.__dict__)
    except SystemExit:
        raise
    except BaseException as exc:
        import linecache
        import traceback

        linecache.cache["<script>"] = (len(source), None, source.splitlines(True), "<script>")
        tb = exc.__traceback__
        traceback.print_exception(type(exc), exc, tb.tb_next if tb is not None else None)
        sys.exit(1)


_main()
'''


def lean(environment: Environment) -> bool:
    """Whether ``environment`` runs the Python that runs hermes (whose site-packages the bootstrap knows)."""
    return bool(environment.python == sys.executable)


@functools.cache
def bootstrap_source(lean: bool = True) -> str:
    """The bootstrap: for the lean start (``-S``), this Python's site-packages and prefixes filled in."""
    dirs = site_dirs() if lean else None
    prefixes = (sys.prefix, sys.exec_prefix)
    return BOOTSTRAP.replace("{site_dirs!r}", repr(dirs)).replace("{prefixes!r}", repr(prefixes))


def write_bootstrap(environment: Environment, directory: str) -> str:
    """The bootstrap written into the run's folder ``directory``; returns its path there."""
    boot = f"{directory}/{BOOT_NAME}"
    environment.write_text(boot, bootstrap_source(lean(environment)), mode=0o600, sync=False)
    return boot


def site_dirs() -> list[str]:
    """The site-packages folders of the Python running hermes (what ``site`` adds, before any ``.pth`` file)."""
    import site

    found = [p for p in site.getsitepackages() if Path(p).is_dir()]
    return [p for p in sys.path if p in found] + [p for p in found if p not in sys.path]


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

    boot = write_bootstrap(environment, directory)
    start = ["-I", "-S", "-B", "-X", "utf8"] if lean(environment) else ["-I", "-B", "-X", "utf8"]
    argv = [environment.python, *start, boot]
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
