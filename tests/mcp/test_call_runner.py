"""The pool ``hermes mcp serve`` runs calls on: turns per session, the time limit, cancellation, closing."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from hermes_core.cancellation import CancelToken
from hermes_core.mcp._runner import CallRunner, CallTookTooLong


def test_a_long_call_of_one_session_never_delays_another_sessions_call() -> None:
    async def main() -> float:
        runner = CallRunner(workers=4, session_concurrency=1, max_call_seconds=30)
        release = threading.Event()
        slow = [asyncio.create_task(runner.run("a", lambda _t: release.wait(5))) for _ in range(3)]
        await asyncio.sleep(0.05)
        started = time.perf_counter()
        assert await runner.run("b", lambda _t: "quick") == "quick"
        took = time.perf_counter() - started
        assert runner.busy("a") and not runner.busy("b")
        release.set()
        assert await asyncio.gather(*slow) == [True, True, True]
        assert not runner.busy("a")
        runner.close()
        return took

    assert asyncio.run(main()) < 1.0


def test_past_the_time_limit_the_token_is_cancelled_and_the_turn_comes_back_when_the_work_stops() -> None:
    seen: list[CancelToken] = []

    def work(token: CancelToken) -> str:
        seen.append(token)
        while not token.cancelled:
            time.sleep(0.01)
        time.sleep(0.1)  # it takes a moment to stop
        return "stopped"

    async def main() -> None:
        runner = CallRunner(workers=2, session_concurrency=1, max_call_seconds=0.2)
        with pytest.raises(CallTookTooLong, match="max_call_seconds"):
            await runner.run("s", work)
        assert seen[0].cancelled and not runner.busy("s")  # the worker was free before the answer came
        runner.close()

    asyncio.run(main())


def test_cancelling_the_caller_cancels_the_token_and_errors_reach_the_caller() -> None:
    async def main() -> None:
        runner = CallRunner(workers=2, session_concurrency=1, max_call_seconds=30)
        seen: list[CancelToken] = []

        def work(token: CancelToken) -> None:
            seen.append(token)
            while not token.cancelled:
                time.sleep(0.01)

        task = asyncio.create_task(runner.run("s", work))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert seen[0].cancelled
        for _ in range(100):  # the turn comes back once the worker is free
            if not runner.busy("s"):
                break
            await asyncio.sleep(0.01)
        assert not runner.busy("s")

        def fails(_token: CancelToken) -> None:
            raise ValueError("boom")

        with pytest.raises(ValueError, match="boom"):
            await runner.run("s", fails)
        runner.close()

    asyncio.run(main())


def test_calls_still_queued_when_the_runner_closes_never_run() -> None:
    ran: list[int] = []

    async def main() -> None:
        runner = CallRunner(workers=1, session_concurrency=4, max_call_seconds=30)
        release = threading.Event()
        first = asyncio.create_task(runner.run("s", lambda _t: release.wait(5)))
        queued = [asyncio.create_task(runner.run("s", lambda _t, i=i: ran.append(i))) for i in range(3)]
        await asyncio.sleep(0.05)
        runner.close()
        release.set()
        assert await first is True
        for task in queued:
            with pytest.raises(RuntimeError, match="closing"):
                await task
        with pytest.raises(RuntimeError, match="closed"):
            await runner.run("s", lambda _t: None)

    asyncio.run(main())
    assert ran == []


def _call_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "hermes-mcp-call" and t.is_alive())


def test_short_calls_share_the_core_workers_and_blocked_ones_are_covered_by_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Calls that compute, short or long, run on two threads (more would only fight over the GIL); calls that
    block get workers of their own within a few tens of ms, so a short call behind them still answers at once,
    and the extra workers end once they have had nothing to do for a while."""
    from hermes_core.mcp import _runner

    monkeypatch.setattr(_runner, "_LINGER", 0.3)
    before = _call_threads()

    async def main() -> None:
        runner = CallRunner(workers=16, session_concurrency=4, max_call_seconds=30)

        def short(_token: CancelToken) -> int:
            sum(range(20_000))  # a little work that holds the GIL, like a read_file page
            return threading.get_ident()

        idents = await asyncio.gather(*(runner.run(f"s{i % 20}", short) for i in range(200)))
        assert len(set(idents)) <= 2

        def long(_token: CancelToken) -> int:  # 0.1 s or more of computing: busy, not blocked
            until = time.thread_time() + 0.1
            while time.thread_time() < until:
                sum(range(1000))
            return threading.get_ident()

        idents = await asyncio.gather(*(runner.run(f"l{i}", long) for i in range(6)))
        assert len(set(idents)) <= 2
        release = threading.Event()
        started: list[int] = []

        def blocked(_token: CancelToken) -> bool:
            started.append(1)
            return release.wait(10)

        stuck = [asyncio.create_task(runner.run(f"b{i % 3}", blocked)) for i in range(9)]
        begun = time.perf_counter()
        assert await runner.run("c", short)
        assert time.perf_counter() - begun < 1.0  # not behind the nine blocked calls
        for _ in range(100):
            if len(started) == 9:
                break
            await asyncio.sleep(0.02)
        assert len(started) == 9  # every blocked call got a worker
        assert _call_threads() - before >= 9
        release.set()
        assert await asyncio.gather(*stuck) == [True] * 9
        for _ in range(100):  # the extra workers end; the core stays
            if _call_threads() - before <= 2:
                break
            await asyncio.sleep(0.05)
        assert _call_threads() - before <= 2
        runner.close()

    asyncio.run(main())
