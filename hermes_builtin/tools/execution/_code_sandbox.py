"""The child process of ``execute_code``: a bootstrap that sets up paths, then runs the script, in the sandbox.

The child is ``python -I -S -B -X utf8 <session dir>/_hermes_boot.py <run dir>``, run through the tool system's
sandbox (``hermes_core.sandbox``): the workspace is its working directory and all it can write, the session's
private directory (the bootstrap, and per run the script, the generated ``hermes_tools`` module and the bridge's
socket) is visible read-only, and the sandbox applies the limits (memory, processes, CPU time, file size), the
timeout and the output caps to the whole process tree. Isolated mode ignores ``PYTHON*`` variables and the user
site, and leaves the script's directory off ``sys.path``, so the bootstrap puts the run's directory first and
the workspace last. It flushes the script's output when it is sent SIGTERM and prints tracebacks without its
own frame.

Start-up is most of what a short script costs, so the bootstrap is lean: ``-S`` skips ``site`` (whose ``.pth``
files, editable-install finders and distutils hack can cost more than the interpreter's own start) and the
bootstrap puts the host Python's site-packages on ``sys.path`` itself; an import that still finds nothing runs
``site``'s ``.pth`` processing once and tries again, so a package that needs it imports as before. ``exit``,
``quit`` and ``help`` are there as with ``site``. Until a traceback is printed, the bootstrap imports nothing
the interpreter has not loaded already (``_signal``, not ``signal``, which pulls in ``enum``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "BOOTSTRAP",
    "BOOT_NAME",
    "SCRIPT_NAME",
    "ScriptLimits",
    "ScriptRun",
    "bootstrap_source",
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
_SITE_DIRS = {site_dirs!r}
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
    run = sys.argv[1]
    with open(os.path.join(run, "script.py"), encoding="utf-8") as fh:
        source = fh.read()
    import _signal

    _signal.signal(_signal.SIGTERM, _on_term)
    sys.path.insert(0, run)
    sys.path.extend(d for d in _SITE_DIRS if d not in sys.path)
    sys.path.append(os.getcwd())
    sys.meta_path.append(_LateSite())
    import builtins

    builtins.exit = builtins.quit = _quit
    builtins.help = _help
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


def write_bootstrap(directory: Path, run: Path) -> Path:
    """The bootstrap in the session's folder ``directory``, written once, whole or not at all (a concurrent run
    may be reading it), by way of the run's folder ``run``."""
    boot = directory / BOOT_NAME
    if not boot.exists():
        fresh = run / BOOT_NAME
        fresh.write_text(bootstrap_source(), encoding="utf-8")
        fresh.chmod(0o600)
        fresh.replace(boot)
    return boot


def bootstrap_source() -> str:
    """The bootstrap for the Python running hermes: its site-packages and prefixes filled in."""
    prefixes = (sys.prefix, sys.exec_prefix)
    return BOOTSTRAP.replace("{site_dirs!r}", repr(site_dirs())).replace("{prefixes!r}", repr(prefixes))


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
    sandbox: Any,
    directory: Path,
    run: Path,
    *,
    cwd: Path,
    limits: ScriptLimits,
    stdout_cap: int,
    stderr_cap: int,
) -> ScriptRun:
    """Run ``run/script.py`` (``run``: a folder in ``directory``, the session's private one) through the
    bootstrap in ``sandbox``; never leaves processes behind."""
    from hermes_core.sandbox import Limits

    boot = write_bootstrap(directory, run)
    argv = [sys.executable, "-I", "-S", "-B", "-X", "utf8", str(boot), str(run)]
    result = sandbox.run(
        argv,
        cwd=cwd,
        workspace=cwd,
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
        read_only=[directory],
        grace=1.0,
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
