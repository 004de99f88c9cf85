"""The terminal's one reader: questions from worker threads (approvals, the ``clarify`` tool) are queued here and
answered one at a time by the thread that owns the terminal (``hermes chat``'s main thread).

A question belongs to the agent turn that asked it: when that turn is cancelled, the question is withdrawn (its
prompt, if shown, stops reading) and its answer is a denial, whenever a key is pressed. Between turns the desk is
closed and every question is refused at once, so nothing a cancelled turn left behind can be answered later.
"""

from __future__ import annotations

import collections
import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from .._aio.cancel import CancelToken, cancel_scope, current_token

if TYPE_CHECKING:
    from ..security import Answer, ApprovalRequest, Approver

__all__ = ["Desk"]


class _Question:
    __slots__ = ("answer", "ask", "done", "stop")

    def __init__(self, ask: Callable[[], Any], refusal: Any) -> None:
        self.ask = ask  # asks on the terminal and returns the answer (run on the desk's thread)
        self.answer = refusal  # what it stays when withdrawn
        self.done = threading.Event()
        self.stop = CancelToken()  # withdrawn: the prompt stops reading, the answer is the refusal

    def withdraw(self) -> None:
        self.stop.cancel()
        self.done.set()


class Desk:
    """Queues questions from any thread; ``serve`` answers them on the terminal's thread.

    ``approver`` asks approvals on the terminal (a ``TerminalApprover``); ``ask_user`` asks the ``clarify``
    tool's questions; ``prompting()`` is entered on the desk's thread around each prompt (the chat holds other
    output back there and drops keys typed ahead, so no stray key answers a prompt).
    """

    def __init__(
        self,
        approver: Approver,
        ask_user: Callable[[str, Sequence[str] | None], str],
        prompting: Callable[[], contextlib.AbstractContextManager[Any]] | None = None,
    ) -> None:
        self._approver = approver
        self._ask_user = ask_user
        self._prompting = prompting if prompting is not None else contextlib.nullcontext
        self._queue: collections.deque[_Question] = collections.deque()
        self._current: _Question | None = None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._open = False

    # -- asked from worker threads -------------------------------------------------------------------------

    def approve(self, request: ApprovalRequest) -> Answer:
        """The ``Approver`` of the session: asked on the terminal, in turn; "deny" once withdrawn."""
        answer: Answer = self._submit(lambda: self._approver.approve(request), "deny")
        return answer

    def ask_user(self, question: str, choices: Sequence[str] | None = None) -> str:
        """The session's ``ask_user`` (the ``clarify`` tool), asked on the terminal in turn."""
        from ..errors import ToolError

        answer = self._submit(lambda: self._ask_user(question, choices), None)
        if answer is None:
            raise ToolError("the user stopped this turn before answering", retryable=False)
        return str(answer)

    def _submit(self, ask: Callable[[], Any], refusal: Any) -> Any:
        token = current_token()
        if token is not None and token.cancelled:
            return refusal
        question = _Question(ask, refusal)
        with self._lock:
            if not self._open:
                return refusal
            self._queue.append(question)
        self._wake.set()
        remove = token.on_cancel(question.withdraw) if token is not None else None
        try:
            question.done.wait()
        finally:
            if remove is not None:
                remove()
        return question.answer

    # -- the terminal's thread -----------------------------------------------------------------------------

    def wake(self) -> None:
        self._wake.set()

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """Open the desk for one turn; closing it withdraws every question still waiting or shown."""
        with self._lock:
            self._open = True
        try:
            yield
        finally:
            self.close()

    def close(self) -> None:
        with self._lock:
            self._open = False
            waiting = list(self._queue)
            self._queue.clear()
            current = self._current
        for question in waiting:
            question.withdraw()
        if current is not None:
            current.withdraw()

    def serve(self, finished: threading.Event) -> None:
        """Answer questions as they come until ``finished`` is set; a ``KeyboardInterrupt`` propagates."""
        while not finished.is_set():
            self._wake.wait()
            self._wake.clear()
            while True:
                with self._lock:
                    question = self._queue.popleft() if self._queue else None
                    self._current = question
                if question is None:
                    break
                try:
                    if not question.stop.cancelled:
                        self._ask(question)
                finally:
                    with self._lock:
                        self._current = None
                    question.done.set()

    def _ask(self, question: _Question) -> None:
        with self._prompting(), cancel_scope(question.stop):
            answer = question.ask()
        if not question.stop.cancelled:  # an answer given after the turn was cancelled counts for nothing
            question.answer = answer


def drop_typed_ahead(stream: Any) -> None:
    """Discard keys typed before a prompt appeared (a terminal only), so none of them answers it."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return
    if os.name == "posix" and os.isatty(fd):
        import termios

        with contextlib.suppress(termios.error):
            termios.tcflush(fd, termios.TCIFLUSH)
