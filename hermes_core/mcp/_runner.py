"""Where ``hermes mcp serve`` runs tool calls: a bounded pool shared fairly by the client sessions.

Every call runs on one of ``workers`` threads. A session runs at most ``session_concurrency`` calls at once; its
further calls wait for one of its own to end, never for other sessions' calls, so one client's long calls
cannot delay another's short ones. Each call runs under a ``CancelToken`` of its own (``hermes_core.cancellation``,
the mechanism the agent loop uses too). A call that the client cancels (``notifications/cancelled``, or a closed
response stream) has its token cancelled: if it was still waiting its turn it never starts, a sync handler is
interrupted (a sandboxed command is killed with its process tree on the way out), an async handler is cancelled.
A call still running after ``max_call_seconds`` is cancelled the same way and answers with an error that says so.
A session's turn is given back when its call's thread is really free.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import contextlib
from collections import deque
from collections.abc import Callable
from typing import TypeVar

from .._aio.cancel import CancelToken

__all__ = ["CallRunner", "CallTookTooLong"]

T = TypeVar("T")

_AFTER_LIMIT = 5.0  # seconds a call cancelled for its duration gets to report how it ended


class CallTookTooLong(Exception):
    """A call ran past ``max_call_seconds`` and did not end when it was cancelled."""


class _Gate:
    """A session's turns: at most ``size`` calls at once, the rest wait in order (loop-thread only)."""

    __slots__ = ("active", "size", "waiting")

    def __init__(self, size: int) -> None:
        self.size = size
        self.active = 0
        self.waiting: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> None:
        if self.active < self.size and not self.waiting:
            self.active += 1
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.release()  # the turn came just as the wait was cancelled: pass it on
            else:
                self.waiting.remove(turn)
            raise

    def release(self) -> None:
        while self.waiting:
            turn = self.waiting.popleft()
            if not turn.done():
                turn.set_result(None)  # the turn moves on: ``active`` stays
                return
        self.active -= 1

    @property
    def idle(self) -> bool:
        return self.active == 0 and not self.waiting


class CallRunner:
    """Runs calls for the sessions of one server (see the module docstring). Use from one event loop."""

    def __init__(self, workers: int, session_concurrency: int, max_call_seconds: float) -> None:
        self.pool = cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hermes-mcp-call")
        self.session_concurrency = session_concurrency
        self.max_call_seconds = max_call_seconds
        self._gates: dict[str, _Gate] = {}

    async def run(self, session_id: str, work: Callable[[CancelToken], T], *, what: str = "the call") -> T:
        """``work(token)`` on the pool in ``session_id``'s turn; cancelling the awaiting task cancels ``token``.

        Past ``max_call_seconds`` the token is cancelled and ``CallTookTooLong`` raised (once the work has
        stopped, or after a few seconds more if it will not)."""
        gate = self._gates.get(session_id)
        if gate is None:
            gate = self._gates[session_id] = _Gate(self.session_concurrency)
        try:
            await gate.acquire()
        except BaseException:
            self._drop_if_idle(session_id, gate)
            raise
        token = CancelToken()
        loop = asyncio.get_running_loop()
        try:
            future = loop.run_in_executor(self.pool, work, token)
        except BaseException:
            gate.release()
            self._drop_if_idle(session_id, gate)
            raise

        def done(_: asyncio.Future[T]) -> None:  # on the loop thread, once the worker is really free
            gate.release()
            self._drop_if_idle(session_id, gate)

        future.add_done_callback(done)
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.max_call_seconds)
        except TimeoutError:
            token.cancel()
            with contextlib.suppress(
                Exception
            ):  # it stopped, failed or would not stop: the limit is the answer
                await asyncio.wait_for(asyncio.shield(future), _AFTER_LIMIT)
            raise CallTookTooLong(
                f"{what} ran longer than this server allows ({self.max_call_seconds:g} s, "
                "[mcp.serve] max_call_seconds)"
            ) from None
        except asyncio.CancelledError:
            token.cancel()
            raise

    def _drop_if_idle(self, session_id: str, gate: _Gate) -> None:
        if gate.idle and self._gates.get(session_id) is gate:
            del self._gates[session_id]

    def busy(self, session_id: str) -> bool:
        """Whether a call of ``session_id`` is running or waiting."""
        return session_id in self._gates

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
