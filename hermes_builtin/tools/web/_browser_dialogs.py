"""JavaScript dialogs (``alert``, ``confirm``, ``prompt``, ``beforeunload``) without a blocked browser.

A page that opens a dialog stops until it is answered; so does the action that made it open one (a click whose
handler calls ``confirm()`` returns only once the dialog is closed). Every page action therefore runs through
``guarded``: when a dialog opens first, the tool answers at once with the dialog's text and the action is *held*
(it goes on running). ``answer`` (``browser_dialog``) accepts or dismisses the dialog, then returns what the
held action returns once it finishes (its snapshot, an evaluation's value), or a fresh snapshot.

While a dialog is open, actions that need the page are refused with a message that says how to answer it.
``[plugins.browser] dialogs = "accept"`` or ``"dismiss"`` answers every dialog at once instead (noted in the
console messages).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any

from hermes_core import ToolError

from ._browser_engine import BrowserSession, describe_dialog, first_line


def _how(dialog: Any) -> str:
    text = ", with text to type" if dialog.type == "prompt" else ""
    return f"answer it with browser_dialog (accept or dismiss{text}); the page waits until then"


def _a(dialog: Any) -> str:
    return f"{'an' if dialog.type == 'alert' else 'a'} {describe_dialog(dialog)} dialog"


def opened(session: BrowserSession) -> str:
    """What the model is told when a dialog opened during its action."""
    return f"The page opened {_a(session.dialog)}: {_how(session.dialog)}."


def refuse_while_open(session: BrowserSession) -> None:
    """Raise a ``ToolError`` naming the open dialog, if there is one."""
    if session.dialog is not None:
        what = _a(session.dialog)
        raise ToolError(f"{what[0].upper()}{what[1:]} is open: {_how(session.dialog)}.")


async def _first(session: BrowserSession, task: asyncio.Task[str], timeout: float | None) -> bool:
    """Wait for ``task`` or a dialog, whichever comes first; True when the task is done."""
    waiter = asyncio.ensure_future(session.dialog_open.wait())
    try:
        await asyncio.wait({task, waiter}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    return task.done()


async def guarded(session: BrowserSession, work: Coroutine[Any, Any, str]) -> str:
    """Run a page action; if a dialog opens before it ends, hold the action and say so (module docstring)."""
    if session.dialog is not None:
        work.close()
        refuse_while_open(session)
    task = asyncio.ensure_future(work)
    try:
        finished = await _first(session, task, None)
    except asyncio.CancelledError:
        task.cancel()
        raise
    if finished:
        return task.result()
    _drop_held(session)
    session.held = task
    return opened(session)


def _drop_held(session: BrowserSession) -> None:
    held, session.held = session.held, None
    if held is not None and not held.done():
        held.cancel()
    if held is not None and held.done() and not held.cancelled():
        held.exception()  # retrieved: a failed held action is not an "exception never retrieved" warning


async def answer(session: BrowserSession, accept: bool, text: str | None, snapshot: Any) -> str:
    """Accept or dismiss the open dialog; then the held action's result, or ``await snapshot()``."""
    dialog = session.dialog
    if dialog is None:
        raise ToolError("no dialog is open (dialogs the page opened earlier were answered or closed)")
    what = describe_dialog(dialog)
    if text is not None and not (accept and dialog.type == "prompt"):
        raise ToolError(f"text answers a prompt dialog when accepting it; this is a {dialog.type}")
    try:
        if accept:
            await (dialog.accept(text) if text is not None else dialog.accept())
        else:
            await dialog.dismiss()
    except Exception as err:  # the page closed or navigated meanwhile
        session.forget_dialog()
        raise ToolError(f"could not answer the {what} dialog: {first_line(err)}") from None
    session.forget_dialog()
    verb = "Accepted" if accept else "Dismissed"
    typed = f" with {text!r}" if text is not None else ""
    session.console.append(f"[dialog] {what} {verb.lower()}{typed}")
    done = f"{verb} the {what} dialog{typed}."
    held, session.held = session.held, None
    if held is not None:
        finished = await _first(session, held, session.engine.settings.action_timeout)
        if finished and not held.cancelled() and held.exception() is None:
            return f"{done}\n{held.result()}"
        if not finished and session.dialog is not None:
            session.held = held  # the same action opened another dialog
            return f"{done}\n{opened(session)}"
        if not finished:
            held.cancel()
            with contextlib.suppress(BaseException):
                await held
    return f"{done}\n{await guarded(session, snapshot())}"
