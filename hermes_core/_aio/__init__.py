"""The async runtime of a tool system, in one place.

- ``shared_loop.SharedLoop``: the one event loop a system's async handlers run on (the caller's, adopted by
  ``acall()``, or a private loop that sync callers run themselves).
- ``bridge.LoopBridge``: an event loop on a daemon thread of its own, for work that must keep running between
  calls (the MCP client's sessions).
- ``watchdog.Watchdog``: deadlines for sync handlers that run inline on the caller's thread.
- ``cancel.CancelToken``: cancellation of an agent's turn that reaches everything it started (interrupted
  handlers and their process trees, cancelled tasks, denied approvals, shut streams); ``run_cancellable``
  waits for work that may not stop.

Import the submodule you need: the package itself loads nothing (asyncio costs start-up).
"""
