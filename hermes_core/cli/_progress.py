"""A spinner with the elapsed time on stderr for a command that takes more than a second (a terminal only)."""

from __future__ import annotations

import contextlib
import itertools
import sys
import threading
import time
from collections.abc import Iterator
from types import TracebackType
from typing import Any, TextIO

__all__ = ["Progress"]

_FRAMES = "|/-\\"


class Progress:
    """``with Progress("terminal"):`` shows ``| terminal  2.4 s`` on stderr once ``delay`` seconds have passed,
    updated ten times a second and erased at the end; nothing at all when stderr is not a terminal. ``paused()``
    erases it while the command talks to the human (an approval, a question)."""

    def __init__(self, label: str, *, delay: float = 1.0, stream: TextIO | None = None) -> None:
        self.label = label
        self.delay = delay
        self.stream = stream if stream is not None else sys.stderr
        self._stop = threading.Event()
        self._quiet = threading.Lock()  # held while paused: nothing is drawn
        self._drawn = False
        self._thread: threading.Thread | None = None
        self._started = 0.0

    @property
    def live(self) -> bool:
        try:
            return bool(self.stream.isatty())
        except (AttributeError, ValueError):
            return False

    def __enter__(self) -> Progress:
        self._started = time.monotonic()
        if self.live:
            self._thread = threading.Thread(target=self._run, name="hermes-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        with self._quiet:
            self._erase()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Erase the spinner and draw nothing inside the block."""
        with self._quiet:
            self._erase()
            yield

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        for frame in itertools.cycle(_FRAMES):
            with self._quiet:
                if self._stop.is_set():
                    return
                elapsed = time.monotonic() - self._started
                self._write(f"\r{frame} {self.label}  {elapsed:.1f} s\x1b[K")
                self._drawn = True
            if self._stop.wait(0.1):
                return

    def _erase(self) -> None:
        if self._drawn:
            self._write("\r\x1b[K")
            self._drawn = False

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed terminal: the command goes on without its spinner
            self._stop.set()


class PausingApprover:
    """An approver that erases ``progress`` while it asks (the terminal approver prompts on stderr)."""

    def __init__(self, approver: Any, progress: Progress) -> None:
        self.approver = approver
        self.progress = progress

    def approve(self, request: Any) -> Any:
        with self.progress.paused():
            return self.approver.approve(request)
