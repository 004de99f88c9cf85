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


def _short(_token: CancelToken) -> int:
    sum(range(20_000))  # a little work that holds the GIL, like a read_file page
    return threading.get_ident()


def test_short_calls_that_compute_share_two_workers() -> None:
    """More threads would only fight over the GIL."""

    async def main() -> None:
        runner = CallRunner(workers=16, session_concurrency=4, max_call_seconds=30)
        idents = await asyncio.gather(*(runner.run(f"s{i % 20}", _short) for i in range(1000)))
        assert len(set(idents)) <= 3  # two, and a third if the loop held the GIL 20 ms while calls waited
        runner.close()

    asyncio.run(main())


def test_a_short_call_does_not_wait_behind_long_ones_that_compute() -> None:
    def long(_token: CancelToken) -> None:  # 1 s of computing
        until = time.thread_time() + 1.0
        while time.thread_time() < until:
            sum(range(1000))

    async def main() -> float:
        runner = CallRunner(workers=16, session_concurrency=4, max_call_seconds=30)
        hogs = [asyncio.create_task(runner.run(f"l{i}", long)) for i in range(2)]
        await asyncio.sleep(0.05)
        begun = time.perf_counter()
        await runner.run("c", _short)
        took = time.perf_counter() - begun
        await asyncio.gather(*hogs)
        runner.close()
        return took

    assert (
        asyncio.run(main()) < 0.5
    )  # a worker came for it after a tenth of a second, not after the long ones


def test_short_calls_that_wait_on_io_run_side_by_side() -> None:
    at_once = [0, 0]  # now, most
    counting = threading.Lock()

    def waits_on_io(_token: CancelToken) -> None:  # a short wait in a system call, as a quick HTTP request
        with counting:
            at_once[0] += 1
            at_once[1] = max(at_once)
        time.sleep(0.01)
        with counting:
            at_once[0] -= 1

    async def main() -> None:
        runner = CallRunner(workers=16, session_concurrency=4, max_call_seconds=30)
        await asyncio.gather(*(runner.run(f"io{i % 20}", waits_on_io) for i in range(300)))
        runner.close()

    asyncio.run(main())
    assert at_once[1] >= 6


def test_blocked_calls_each_get_a_worker_and_the_extra_workers_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """A short call behind nine blocked ones still answers at once; once idle for a while the extras end."""
    from hermes_core.mcp import _runner

    monkeypatch.setattr(_runner, "_LINGER", 0.3)

    async def main() -> None:
        runner = CallRunner(workers=16, session_concurrency=4, max_call_seconds=30)
        workers = runner._workers  # its threads (other tests' runners may still be ending theirs)
        release = threading.Event()
        started: list[int] = []

        def blocked(_token: CancelToken) -> bool:
            started.append(1)
            return release.wait(10)

        stuck = [asyncio.create_task(runner.run(f"b{i % 3}", blocked)) for i in range(9)]
        begun = time.perf_counter()
        assert await runner.run("c", _short)
        assert time.perf_counter() - begun < 1.0  # not behind the nine blocked calls
        for _ in range(100):
            if len(started) == 9:
                break
            await asyncio.sleep(0.02)
        assert len(started) == 9  # every blocked call got a worker
        assert workers._threads >= 9
        release.set()
        assert await asyncio.gather(*stuck) == [True] * 9
        for _ in range(100):  # the extra workers end; the core stays
            if workers._threads <= 2:
                break
            await asyncio.sleep(0.05)
        assert workers._threads <= 2
        runner.close()

    asyncio.run(main())
