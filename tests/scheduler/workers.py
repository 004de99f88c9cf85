"""Processes the multi-process tests start: a scheduler on a fast clock, and a kanban claimer.

``python workers.py scheduler STORE T0 SPEED SECONDS``: a tool system (the built-ins plus the drop-ins of
$HERMES_HOME/plugins) whose scheduler runs on a clock where SPEED seconds pass per real second from real time T0.
``python workers.py claim STORE START``: waits until START, then claims one task and prints its id and fence.
"""

from __future__ import annotations

import sys
import time


def scheduler(store: str, t0: float, speed: float, seconds: float) -> None:
    import hermes_builtin.plugin
    from hermes_core import ToolSystem

    def clock() -> float:
        return t0 + (time.time() - t0) * speed

    config = {"scheduler": {"store": store}, "tools": {"search": "off"}}
    system = ToolSystem.load(load_entry_points=False, plugins=[hermes_builtin.plugin], config=config)
    runs = []
    system.start_scheduler(clock=clock, tick=0.05, lease=1e6, on_run=runs.append)
    print("started", flush=True)
    time.sleep(seconds)
    system.close()
    for run in runs:
        print(run.slot, run.status, flush=True)


def claim(store: str, start: float) -> None:
    from hermes_builtin.kanban import Board
    from hermes_core.stores import store_url

    board = Board(store_url(store, None))
    me = f"worker-{__import__('os').getpid()}"
    while time.time() < start:
        time.sleep(0.001)
    got = board.claim_next(me, lease=60)
    print(f"{got[0]['id']} {got[1]}" if got else "none", flush=True)


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "scheduler":
        scheduler(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]))
    else:
        claim(sys.argv[2], float(sys.argv[3]))
