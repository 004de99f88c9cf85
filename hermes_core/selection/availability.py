"""Which tools are available right now: ``requires_env`` and ``check_fn`` verdicts, cached with a short TTL.

A check is ``check_fn()`` or, when it declares a ``system`` parameter, ``check_fn(system)``. It returns a truth
value, ``(ok, reason)``, or ``Unavailable(reason, by_design=True)`` for a tool that is hidden on purpose in this
setting (``clarify`` without a way to ask the user): the doctor does not count that as a problem; an
``Unavailable`` with a ``fix`` gives the doctor its remedy. It runs on a small thread pool with a timeout, so a check that hangs hides its tool (with that
reason) instead of hanging ``definitions()``; a hung check is not resubmitted while it is still running.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ..decisions import Unavailable
from ..registry import ToolEntry

if TYPE_CHECKING:
    import concurrent.futures as cf

__all__ = ["Availability", "Unavailable"]

log = logging.getLogger("hermes.checks")


def takes_system(fn: Callable[..., object]) -> bool:
    """Whether ``fn`` declares a parameter named ``system`` (checks and schema overrides may ask for it)."""
    import inspect

    try:
        return "system" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


class Availability:
    """Check verdicts per tool: ``(ok, reason)``, each valid until its expiry time."""

    def __init__(self, ttl: float = 5.0, timeout: float = 2.0, system: object = None) -> None:
        self.system = system
        self.ttl = ttl
        self.timeout = timeout
        # name -> (expires_at, ok, reason, check_fn the verdict was made for)
        self._verdicts: dict[str, tuple[float, bool, str, object]] = {}
        self._running: dict[object, cf.Future[object]] = {}
        self._pool: cf.ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self.epoch = 0  # bumped whenever a verdict changes
        self.by_design: set[str] = (
            set()
        )  # tools whose last verdict hid them on purpose (Unavailable.by_design)
        self.fixes: dict[str, str] = {}  # tool -> the remedy its last Unavailable verdict named

    def invalidate(self) -> None:
        """Forget every verdict (the next query re-runs the checks)."""
        with self._lock:
            self._verdicts.clear()
            self.epoch += 1

    def _executor(self) -> cf.ThreadPoolExecutor:
        if self._pool is None:
            import concurrent.futures as cf

            self._pool = cf.ThreadPoolExecutor(max_workers=8, thread_name_prefix="hermes-check")
        return self._pool

    def _env_reason(self, entry: ToolEntry) -> str | None:
        missing = [var for var in entry.requires_env if not os.environ.get(var)]
        if missing:
            return f"missing environment variable{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
        return None

    def verdicts(self, entries: Iterable[ToolEntry]) -> dict[str, tuple[bool, str]]:
        """Current verdicts for ``entries``; expired or missing ones are (re)computed, checks in parallel."""
        now = time.monotonic()
        out: dict[str, tuple[bool, str]] = {}
        pending: list[tuple[ToolEntry, cf.Future[object]]] = []
        for entry in entries:
            cached = self._verdicts.get(entry.name)
            if cached is not None and cached[0] > now and cached[3] is entry.check_fn:
                out[entry.name] = (cached[1], cached[2])
                continue
            reason = self._env_reason(entry)
            if reason is not None:
                self._store(entry, False, reason, now)
                out[entry.name] = (False, reason)
            elif entry.check_fn is None:
                self._store(entry, True, "", now)
                out[entry.name] = (True, "")
            else:
                fut = self._running.get(entry.check_fn)
                if fut is None or fut.done():
                    fut = self._executor().submit(self._run_check, entry.check_fn)
                    self._running[entry.check_fn] = fut
                pending.append((entry, fut))
        if pending:
            import concurrent.futures as cf

            cf.wait([f for _, f in pending], timeout=self.timeout)
            for entry, fut in pending:
                ok, reason = self._read(entry, fut)
                self._store(entry, ok, reason, now)
                out[entry.name] = (ok, reason)
        return out

    def _run_check(self, check: Callable[..., object]) -> object:
        """Call a check; one that declares a parameter named ``system`` gets the tool system."""
        return check(self.system) if takes_system(check) else check()

    def _read(self, entry: ToolEntry, fut: cf.Future[object]) -> tuple[bool, str]:
        if not fut.done():
            return False, f"check timed out after {self.timeout:g} s"
        self._running.pop(entry.check_fn, None)
        err = fut.exception()
        if err is not None:
            log.warning("check of tool %r raised %s: %s", entry.name, type(err).__name__, err)
            return False, f"check raised {type(err).__name__}: {err}"
        result = fut.result()
        if isinstance(result, Unavailable):
            if result.by_design:
                self.by_design.add(entry.name)
            if result.fix:
                self.fixes[entry.name] = result.fix
            return False, result.reason or "check failed"
        self.by_design.discard(entry.name)
        self.fixes.pop(entry.name, None)
        if isinstance(result, tuple) and len(result) == 2:  # (ok, reason) from a check that explains itself
            return bool(result[0]), str(result[1] or ("" if result[0] else "check failed"))
        return (True, "") if result else (False, "check_fn returned False")

    def _store(self, entry: ToolEntry, ok: bool, reason: str, now: float) -> None:
        prior = self._verdicts.get(entry.name)
        self._verdicts[entry.name] = (now + self.ttl, ok, reason, entry.check_fn)
        if prior is None or prior[1] != ok:
            self.epoch += 1

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
