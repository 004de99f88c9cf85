"""Approval modes of the built-ins that act with a user's powers (``[approvals] <key> = "run" | "ask"``).

``browser_js`` gates JavaScript that ``browser_console`` evaluates (default "run"), ``browser_cdp`` raw DevTools
commands (default "ask") and ``computer_use`` every action that moves, clicks, types or scrolls on the desktop
(default "ask"). Any value but "run" (or false) asks: a typo fails closed. The subject of an approval is the
exact action, so "always" never covers a category.
"""

from __future__ import annotations

from hermes_core import ApprovalDenied, CallContext

DEFAULTS = {"browser_js": "run", "browser_cdp": "ask", "computer_use": "ask"}


def must_ask(context: CallContext, key: str) -> bool:
    """Whether ``[approvals] key`` wants a human to approve (see the module docstring)."""
    approvals = context.host.config.approvals if context.host is not None else {}
    mode = approvals.get(key, DEFAULTS[key])
    return mode not in ("run", False)


def ask_first(context: CallContext, key: str, subject: str, reason: str) -> None:
    """Ask a human to approve ``subject`` when ``[approvals] key`` says so; ``ApprovalDenied`` when refused."""
    if not must_ask(context, key):
        return
    try:
        context.request_approval(subject, reason, key)
    except ApprovalDenied:
        raise ApprovalDenied(
            f"{reason} needs a human's approval and was not approved "
            f'([approvals] {key} = "run" lets it run without asking)'
        ) from None
