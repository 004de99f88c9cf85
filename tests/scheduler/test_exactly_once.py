"""Each due slot runs once with several hermes processes alive, on SQLite and on PostgreSQL; ten processes
claiming kanban tasks at once never take the same one."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from hermes_builtin.kanban import Board
from hermes_core import stores
from hermes_core.scheduler import Job, JobStore

HERE = Path(__file__).resolve().parent
WORKERS = str(HERE / "workers.py")

APPEND_PLUGIN = """
import os
from hermes_core import registry

def append_line(path: str, text: str) -> str:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text + "\\n")
    return "appended"

registry.register(
    name="append_line", toolset="testing", handler=append_line,
    schema={"name": "append_line", "description": "Append a line.", "parameters": {"type": "object",
            "properties": {"path": {"type": "string"}, "text": {"type": "string"}}, "required": ["path", "text"]}},
)
"""


def _drop_in(home: Path) -> None:
    plugins = home / "plugins"
    plugins.mkdir(parents=True, exist_ok=True)
    (plugins / "append_line.py").write_text(APPEND_PLUGIN)


def test_a_job_due_every_minute_runs_once_per_minute_with_two_processes(
    store_url: str, workspace: Path, tmp_path: Path
) -> None:
    home = Path(os.environ["HERMES_HOME"])
    _drop_in(home)
    log = tmp_path / "ticks.txt"
    t0 = time.time() + 3.0  # both processes are up by then; 60 clock seconds pass per real second
    speed, seconds = 60.0, 6.0
    store = JobStore(stores.store_url(store_url, tmp_path / "unused.db"))
    anchor = int(t0)
    store.add(
        Job(
            id="minutely",
            name="minutely",
            schedule="every:1m",
            tool="append_line",
            arguments={"path": str(log), "text": "tick"},
            workspace=str(workspace),
            created_at=t0,
            anchor=anchor,
        )
    )
    procs = [
        subprocess.Popen(
            [sys.executable, WORKERS, "scheduler", store_url, str(t0), str(speed), str(seconds)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=90) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outputs]
    lines = [line.split() for out, _ in outputs for line in out.splitlines()]
    assert all(out.startswith("started") for out, _ in outputs)
    runs = [(int(slot), status) for slot, status in (line for line in lines if line[0] != "started")]
    slots = sorted(slot for slot, _ in runs)
    # the clock ran from about t0 - 2 s to t0 + 4 s real time, about four clock minutes past the anchor
    assert len(slots) >= 2, outputs
    assert len(set(slots)) == len(slots), f"a slot was taken twice: {runs}"
    assert all((slot - anchor) % 60 == 0 for slot in slots)
    # a slot whose previous run was still going (a loaded machine) is skipped and recorded, never run twice
    assert {status for _, status in runs} <= {"ok", "skipped"}
    ok = [slot for slot, status in runs if status == "ok"]
    assert len(ok) >= 1 and log.read_text().splitlines() == ["tick"] * len(ok)
    history = store.history("minutely", 100)
    assert sorted((r.slot, r.status) for r in history) == sorted(runs)


def test_ten_processes_claiming_at_once_never_double_claim(store_url: str) -> None:
    board = Board(stores.store_url(store_url, Path("unused.db")))
    ids = [board.create(f"task {i}", created_by="test") for i in range(6)]
    start = time.time() + 3.0  # every process is waiting by then
    procs = [
        subprocess.Popen(
            [sys.executable, WORKERS, "claim", store_url, str(start)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(10)
    ]
    results = [p.communicate(timeout=90)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0] * 10
    claimed = [int(r.split()[0]) for r in results if r != "none"]
    assert sorted(claimed) == ids, results  # six tasks, six winners, each task once
    assert results.count("none") == 4
    owners = {board.get(i)["owner"] for i in ids}
    assert len(owners) == 6 and all(board.get(i)["fence"] == 1 for i in ids)
