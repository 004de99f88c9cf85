"""Cancelling calls that are already running: the public names of the one mechanism every part uses.

The agent loop, the MCP server, a chat UI and any embedding host stop work the same way: they make a
``CancelToken``, run the work under it with ``cancel_scope(token)``, and call ``token.cancel()`` from any thread.
Every tool call made inside the scope (``system.call_outcome``/``acall_outcome`` included, and the calls a tool
makes through ``context.host``) then stops:

- before its handler starts, the call ends at once as an error of kind ``cancelled``;
- a sync handler gets ``CallCancelled`` raised in its thread at its next Python instruction (it is a
  ``BaseException``, so ``except Exception`` lets it through); the sandbox's clean-up on the way out kills the
  command's whole process tree (``terminal``, ``process``, ``execute_code``);
- an async handler's task is cancelled;
- an approval still being asked is a denial;
- a handler that loops on its own can look at ``context.cancelled`` (or call ``context.check_cancelled()``)
  and register clean-up with ``context.on_cancel(callback)``.

The call's outcome is then an error of kind ``cancelled``. ``CancelToken.child()`` makes a token cancelled with
its parent (sub-agents, the calls of one request).
"""

from __future__ import annotations

from ._aio.cancel import CallCancelled, CancelToken, cancel_scope, current_token

__all__ = ["CallCancelled", "CancelToken", "cancel_scope", "current_token"]
