"""Which tools are available right now: ``requires_env`` and ``check_fn`` verdicts, each check run off the call path.

A check is ``check_fn()`` or, when it declares a ``system`` parameter, ``check_fn(system)``. It returns a truth
value, ``(ok, reason)``, or ``Unavailable(reason, by_design=True)`` for a tool that is hidden on purpose in this
setting (``clarify`` without a way to ask the user): the doctor does not count that as a problem; an
``Unavailable`` with a ``fix`` gives the doctor its remedy.

Checks never run on the caller's thread. Runs are queued for a few daemon workers, all of them at once (for new
or expired verdicts when a selection is resolved: the first ``definitions()`` or call after load starts every
check of its selection; ``start`` starts some beforehand); a worker is added whenever the others are stuck in a
long check (``_check_workers``), so a hanging check holds no other back. Each run has a deadline
(``[tools] check_timeout`` after it was queued). A verdict is kept for ``[tools] check_ttl`` seconds; after that it
is still used while the check runs again. Who waits for what:

- ``definitions()`` and the other whole-selection questions wait for the checks that have no verdict yet, each
  until its deadline at most;
- a call waits only for the check of the tool it calls, never for another tool's;
- a check that overruns its deadline makes its tool "unknown": hidden, with that reason, until the check
  answers (its verdict is then used at once); it is not started again while it still runs, and as its thread
  is a daemon it never keeps the process from exiting.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Collection, Iterable
from typing import Any

from .._log import get_logger
from ..decisions import Unavailable
from ..registry import ToolEntry
from ._check_workers import CheckWorkers

__all__ = ["Availability", "Unavailable", "takes_system"]

log = get_logger("hermes.checks")
_IMPORT_RETRY_SECONDS = 0.05
_monotonic = time.monotonic


def takes_system(fn: Callable[..., object]) -> bool:
    """Whether ``fn`` declares a parameter named ``system`` (checks and schema overrides may ask for it)."""
    import inspect

    try:
        return "system" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


class _Run:
    """One run of one check on its own daemon thread: its deadline and, once it answered, its verdict."""

    __slots__ = ("deadline", "done", "timeout", "verdict")

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.deadline = _monotonic() + timeout
        self.done = threading.Event()
        self.verdict: Verdict | None = None


Verdict = tuple[bool, str, bool, str]
"""``(ok, reason, hidden by design, the remedy the check named or "")``."""


class Availability:
    """Check verdicts: each check's last answer, valid until its expiry time (see the module docstring)."""

    def __init__(self, ttl: float = 5.0, timeout: float = 2.0, system: object = None) -> None:
        self.system = system
        self.ttl = ttl
        self.timeout = timeout
        self._answers: dict[object, tuple[float, Verdict]] = {}  # check_fn -> (expires_at, its last verdict)
        self._runs: dict[object, _Run] = {}  # check_fn -> its run in flight
        self._lock = threading.Lock()
        self._closed = False
        self._workers = CheckWorkers()
        self.epoch = 0  # bumped whenever a check answers or the verdicts are dropped: selections follow it
        self.by_design: set[str] = (
            set()
        )  # tools whose last verdict hid them on purpose (Unavailable.by_design)
        self.fixes: dict[str, str] = {}  # tool -> the remedy its last Unavailable verdict named

    def invalidate(self) -> None:
        """Forget every verdict (the next question runs the checks again)."""
        with self._lock:
            self._answers.clear()
            self.epoch += 1

    def start(self, entries: Iterable[ToolEntry]) -> None:
        """Start the checks of ``entries`` that have no current verdict, all at once, without waiting."""
        self.assess(entries, wait=())

    def verdicts(self, entries: Iterable[ToolEntry]) -> dict[str, tuple[bool, str]]:
        """Current verdicts for ``entries``, waiting for the checks that have none (each until its deadline)."""
        return self.assess(entries, wait=True)[0]

    def wait_for(self, entry: ToolEntry) -> tuple[bool, str]:
        """The verdict of one tool, waiting for its own check (until its deadline) when it is running."""
        return self.assess([entry], wait=(entry.name,))[0][entry.name]

    def assess(
        self, entries: Iterable[ToolEntry], wait: bool | Collection[str] = True
    ) -> tuple[dict[str, tuple[bool, str]], frozenset[str]]:
        """``(verdicts, pending)``: the verdict of each entry, and the tools whose check is still running.

        A missing or expired verdict starts its check (unless it already runs). ``wait`` says whose checks to
        wait for, each until its deadline: True for all, or a collection of tool names. A tool whose check runs
        and is not waited for keeps its previous verdict (hidden as not checked yet when it has none) and is
        pending; one whose check overran its deadline is hidden as unknown.
        """
        now = _monotonic()
        everyone = wait is True
        waited_for: Collection[str] = () if isinstance(wait, bool) else wait
        out: dict[str, tuple[bool, str]] = {}
        waiting: list[tuple[ToolEntry, _Run]] = []
        pending: set[str] = set()
        for entry in entries:
            name, check = entry.name, entry.check_fn
            reason = self._env_reason(entry)
            if reason is not None or check is None:
                out[name] = (reason is None, reason or "")
                self.by_design.discard(name)
                self.fixes.pop(name, None)
                continue
            answer = self._answers.get(check)
            if answer is not None and answer[0] > now:
                out[name] = self._verdict(name, answer[1])
                continue
            run = self._run_for(check)
            if run.done.is_set():
                assert run.verdict is not None
                out[name] = self._verdict(name, run.verdict)
            elif run.deadline <= now:
                out[name] = (False, _unknown(run))
            elif everyone or name in waited_for:
                waiting.append((entry, run))
            else:
                pending.add(name)
                out[name] = (
                    self._verdict(name, answer[1]) if answer else (False, "its check is still running")
                )
        for entry, run in waiting:
            self._wait(run)
            if run.verdict is not None:
                out[entry.name] = self._verdict(entry.name, run.verdict)
            else:
                out[entry.name] = (False, _unknown(run))
        return out, frozenset(pending)

    def _wait(self, run: _Run) -> None:
        """Until ``run`` answers or meets its deadline, rescuing the checks queued behind a stuck one."""
        step = self._workers.stuck_after
        while not run.done.is_set():
            left = run.deadline - _monotonic()
            if left <= 0 or run.done.wait(min(left, step)):
                return
            self._workers.rescue()

    def _verdict(self, name: str, verdict: Verdict) -> tuple[bool, str]:
        ok, reason, by_design, fix = verdict
        if by_design:
            self.by_design.add(name)
        else:
            self.by_design.discard(name)
        if fix:
            self.fixes[name] = fix
        else:
            self.fixes.pop(name, None)
        return ok, reason

    def _run_for(self, check: Callable[..., Any]) -> _Run:
        """The run of ``check`` in flight, else a new one started now on a daemon thread."""
        with self._lock:
            run = self._runs.get(check)
            if run is not None:
                return run
            answer = self._answers.get(check)
            if answer is not None and answer[0] > _monotonic():  # it answered a moment ago
                run = _Run(self.timeout)
                run.verdict = answer[1]
                run.done.set()
                return run
            run = self._runs[check] = _Run(self.timeout)
        if self._closed:
            self._answer(check, run, (False, "the tool system is closed", False, ""))
            return run
        self._workers.submit(lambda: self._execute(check, run))
        return run

    def _execute(self, check: Callable[..., Any], run: _Run) -> None:
        """On a check worker: call the check and record its answer."""
        if self._closed:  # queued before the system closed: its answer could no longer be used
            self._answer(check, run, (False, "the tool system is closed", False, ""))
            return
        args = (self.system,) if takes_system(check) else ()
        try:
            try:
                result = check(*args)
            except ImportError:
                # checks run at once on threads of their own and import what they need on first use: a thread
                # may meet a module another thread is still importing (a circle of imports between the two
                # gives it the half-made one). Once the others are done, a second try finds it whole; a module
                # that is really missing fails again and is reported below.
                time.sleep(_IMPORT_RETRY_SECONDS)
                result = check(*args)
        except Exception as err:
            if not self._closed:  # a check the closing system broke under it is no news
                log.warning(
                    "check %s raised %s: %s", getattr(check, "__qualname__", check), type(err).__name__, err
                )
            verdict: Verdict = (False, f"check raised {type(err).__name__}: {err}", False, "")
        else:
            verdict = _judge(result)
        self._answer(check, run, verdict)

    def _answer(self, check: Callable[..., Any], run: _Run, verdict: Verdict) -> None:
        with self._lock:
            self._answers[check] = (_monotonic() + self.ttl, verdict)
            if self._runs.get(check) is run:
                del self._runs[check]
            self.epoch += 1  # a late answer shows at once: selections resolved before it are stale now
        run.verdict = verdict
        run.done.set()

    def _env_reason(self, entry: ToolEntry) -> str | None:
        missing = [var for var in entry.requires_env if not os.environ.get(var)]
        if missing:
            return f"missing environment variable{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
        return None

    def close(self) -> None:
        """Start no more checks; the ones running end on their own (their threads are daemons)."""
        self._closed = True
        self._workers.close()


def _unknown(run: _Run) -> str:
    return f"check timed out after {run.timeout:g} s (it still runs; availability unknown until it answers)"


def _judge(result: object) -> Verdict:
    """``(ok, reason, by design)`` from what a check returned."""
    if isinstance(result, Unavailable):
        return False, result.reason or "check failed", result.by_design, result.fix or ""
    if isinstance(result, tuple) and len(result) == 2:  # (ok, reason) from a check that explains itself
        return bool(result[0]), str(result[1] or ("" if result[0] else "check failed")), False, ""
    return (True, "", False, "") if result else (False, "check_fn returned False", False, "")
