"""A caller's ``CancelToken`` (``cancel_scope``) stops a running call made through ``ToolSystem``: before it starts,
in an async handler, in a sync handler (interrupted, and ``context.cancelled`` turns true), and in the sandbox,
whose command tree is killed (run for real, guard off)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from hermes_core import ToolSystem
from hermes_core.cancellation import CancelToken, cancel_scope, current_token
from hermes_core.testing import processes_gone, processes_with_arg, sleep_marker, unguarded

EMPTY = {"type": "object", "properties": {}}


def _register(system: ToolSystem, name: str, handler: Any) -> None:
    system.registry.register(
        name=name,
        toolset="t",
        handler=handler,
        schema={"name": name, "description": name, "parameters": EMPTY},
    )


@pytest.fixture
def system() -> Any:
    with ToolSystem.load(plugins_dir=False, config={"sandbox": {"backend": "auto"}}) as built:
        seen: dict[str, Any] = {}

        def looping(context: Any) -> str:
            seen["context"] = context
            context.on_cancel(lambda: seen.setdefault("callback", True))
            try:
                for _ in range(400):
                    context.check_cancelled()
                    time.sleep(0.01)
            except BaseException as err:
                seen["raised"] = type(err).__name__
                raise
            return "finished"

        def ignoring() -> str:
            try:
                time.sleep(0.3)
            except Exception:  # CallCancelled is no Exception: it gets through
                return "swallowed"
            return "finished anyway"

        async def waiting() -> str:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                seen["async_cancelled"] = True
                raise
            return "finished"

        def current(context: Any) -> str:
            return f"{current_token()!r} {context.cancel_token is current_token()}"

        _register(built, "looping", looping)
        _register(built, "ignoring", ignoring)
        _register(built, "waiting", waiting)
        _register(built, "current", current)
        built.seen = seen  # type: ignore[attr-defined]
        yield built


def _cancel_after(token: CancelToken, seconds: float) -> None:
    threading.Timer(seconds, token.cancel).start()


def _call(system: ToolSystem, token: CancelToken, name: str, arguments: Any = None) -> Any:
    with cancel_scope(token):
        return system.call_outcome(name, arguments)


def test_a_call_cancelled_before_it_starts_never_runs(system: ToolSystem) -> None:
    token = CancelToken()
    token.cancel()
    outcome = _call(system, token, "looping")
    assert (outcome.status, outcome.error_kind) == ("error", "cancelled")
    assert "cancelled this call" in outcome.result
    assert "context" not in system.seen  # type: ignore[attr-defined]


def test_a_sync_handler_is_stopped_and_sees_the_flag(system: ToolSystem) -> None:
    token = CancelToken()
    _cancel_after(token, 0.2)
    started = time.monotonic()
    outcome = _call(system, token, "looping")
    assert time.monotonic() - started < 1.5
    assert outcome.error_kind == "cancelled", outcome.result
    seen = system.seen  # type: ignore[attr-defined]
    assert seen["context"].cancelled and seen["raised"] == "CallCancelled" and seen["callback"]


def test_a_handler_that_catches_exceptions_is_still_stopped(system: ToolSystem) -> None:
    token = CancelToken()
    _cancel_after(token, 0.05)
    assert _call(system, token, "ignoring").error_kind == "cancelled"


def test_an_async_handler_is_cancelled(system: ToolSystem) -> None:
    token = CancelToken()
    _cancel_after(token, 0.2)
    started = time.monotonic()
    outcome = _call(system, token, "waiting")
    assert time.monotonic() - started < 2
    assert outcome.error_kind == "cancelled" and system.seen["async_cancelled"]  # type: ignore[attr-defined]


def test_acall_cancels_in_the_awaiting_task_without_hurting_the_caller(system: ToolSystem) -> None:
    async def main() -> tuple[Any, Any]:
        token = CancelToken()
        asyncio.get_running_loop().call_later(0.2, token.cancel)
        with cancel_scope(token):
            first = await system.acall_outcome("waiting")
        await asyncio.sleep(0.05)  # the caller's own task was not cancelled by it
        with cancel_scope(CancelToken()):
            second = await system.acall_outcome("current")
        return first, second

    first, second = asyncio.run(main())
    assert first.error_kind == "cancelled"
    assert second.status == "ok" and second.result == "<CancelToken live> True"


def test_the_sandbox_kills_the_command_tree(system: ToolSystem) -> None:
    unguarded(system)
    marker = sleep_marker(30)
    token = CancelToken()
    cancelled_at: list[float] = []

    def cancel_when_running() -> None:
        _wait_for(lambda: processes_with_arg(marker))
        cancelled_at.append(time.monotonic())
        token.cancel()

    threading.Thread(target=cancel_when_running, daemon=True).start()
    outcome = _call(system, token, "terminal", {"command": f"sleep {marker} & sleep {marker}; wait"})
    assert outcome.error_kind == "cancelled", outcome.result
    assert processes_gone(marker, 1.0)
    assert time.monotonic() - cancelled_at[0] < 2


def test_the_token_is_only_current_inside_its_scope(system: ToolSystem) -> None:
    assert current_token() is None
    assert system.call("current") == "None True"
    with cancel_scope(CancelToken()):
        assert system.call("current") == "<CancelToken live> True"


def _wait_for(predicate: Any, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.02)
