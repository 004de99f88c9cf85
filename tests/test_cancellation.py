"""A caller's ``Cancellation`` stops a running call: before it starts, in an async handler, in a sync handler that
checks ``context.cancelled``, and in the sandbox, whose command tree is killed (run for real, guard off)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from hermes_core import ToolSystem
from hermes_core.cancellation import CallCancelled, Cancellation, current_cancellation
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
            for _ in range(400):
                context.check_cancelled()
                time.sleep(0.01)
            return "finished"

        def ignoring() -> str:
            time.sleep(0.3)
            return "finished anyway"

        async def waiting() -> str:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                seen["async_cancelled"] = True
                raise
            return "finished"

        def current() -> str:
            return repr(current_cancellation())

        _register(built, "looping", looping)
        _register(built, "ignoring", ignoring)
        _register(built, "waiting", waiting)
        _register(built, "current", current)
        built.seen = seen  # type: ignore[attr-defined]
        yield built


def _cancel_after(cancel: Cancellation, seconds: float) -> None:
    threading.Timer(seconds, cancel.cancel, args=("the user pressed stop",)).start()


def test_a_call_cancelled_before_it_starts_never_runs(system: ToolSystem) -> None:
    cancel = Cancellation()
    cancel.cancel("too late")
    outcome = system.call_outcome("looping", cancel=cancel)
    assert (outcome.status, outcome.error_kind) == ("error", "cancelled")
    assert "Cancelled: too late." in outcome.result
    assert "context" not in system.seen  # type: ignore[attr-defined]


def test_a_sync_handler_sees_the_flag(system: ToolSystem) -> None:
    cancel = Cancellation()
    _cancel_after(cancel, 0.2)
    started = time.monotonic()
    outcome = system.call_outcome("looping", cancel=cancel)
    assert time.monotonic() - started < 1.5
    assert outcome.error_kind == "cancelled" and "the user pressed stop" in outcome.result
    assert system.seen["context"].cancelled  # type: ignore[attr-defined]


def test_a_handler_that_ignores_the_flag_still_ends_as_cancelled(system: ToolSystem) -> None:
    cancel = Cancellation()
    _cancel_after(cancel, 0.05)
    assert system.call_outcome("ignoring", cancel=cancel).error_kind == "cancelled"


def test_an_async_handler_is_cancelled(system: ToolSystem) -> None:
    cancel = Cancellation()
    _cancel_after(cancel, 0.2)
    started = time.monotonic()
    outcome = system.call_outcome("waiting", cancel=cancel)
    assert time.monotonic() - started < 2
    assert outcome.error_kind == "cancelled" and system.seen["async_cancelled"]  # type: ignore[attr-defined]


def test_acall_cancels_in_the_awaiting_task_without_hurting_the_caller(system: ToolSystem) -> None:
    async def main() -> tuple[Any, Any]:
        cancel = Cancellation()
        asyncio.get_running_loop().call_later(0.2, cancel.cancel, "stop")
        first = await system.acall_outcome("waiting", cancel=cancel)
        await asyncio.sleep(0.05)  # the caller's own task was not cancelled by it
        second = await system.acall_outcome("current", cancel=Cancellation())
        return first, second

    first, second = asyncio.run(main())
    assert first.error_kind == "cancelled"
    assert second.status == "ok" and "Cancellation active" in second.result


def test_the_sandbox_kills_the_command_tree(system: ToolSystem) -> None:
    unguarded(system)
    marker = sleep_marker(30)
    cancel = Cancellation()
    threading.Thread(
        target=lambda: (_wait_for(lambda: processes_with_arg(marker)), cancel.cancel("stop")), daemon=True
    ).start()
    started = time.monotonic()
    outcome = system.call_outcome(
        "terminal", {"command": f"sleep {marker} & sleep {marker}; wait"}, cancel=cancel
    )
    assert outcome.error_kind == "cancelled", outcome.result
    assert "killed" in outcome.result
    assert processes_gone(marker, 1.0)
    assert time.monotonic() - started < 10


def test_the_current_cancellation_is_only_set_inside_a_call(system: ToolSystem) -> None:
    assert current_cancellation() is None
    assert system.call("current") == "None"
    assert "Cancellation active" in system.call("current", cancel=Cancellation())


def test_on_cancel_callbacks_run_once_and_can_be_removed() -> None:
    cancel = Cancellation()
    calls: list[str] = []
    forget = cancel.on_cancel(lambda: calls.append("a"))
    cancel.on_cancel(lambda: calls.append("b"))
    forget()
    assert cancel.cancel("x") is True and cancel.cancel("y") is False
    assert calls == ["b"] and cancel.reason == "x"
    cancel.on_cancel(lambda: calls.append("late"))  # already cancelled: at once
    assert calls == ["b", "late"]
    with pytest.raises(CallCancelled, match=r"Cancelled: x\."):
        cancel.check()


def _wait_for(predicate: Any, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.02)
