"""The writer: one chain across threads and processes, recovery after a cut write, and the SQLite mirror."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from audit_support import read_lines, write_records
from hermes_audit import AuditWriter, sync_sqlite, verify_chain, verify_file
from hermes_audit.writer import read_head


def test_file_is_private_and_reopening_continues_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "audit.jsonl"
    first = write_records(path, 2)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    second = write_records(path, 2)
    assert [r["seq"] for r in second] == [3, 4]
    assert second[0]["prev_hash"] == first[-1]["hash"]
    assert verify_chain(path) == (True, [])


def test_threads_share_one_chain(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditWriter(path) as writer:

        def work(n: int) -> None:
            for i in range(50):
                writer.append({"tool": f"t{n}", "i": i})

        threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    report = verify_file(path)
    assert report.ok, report.problems
    assert report.records == 300


WORKER = textwrap.dedent(
    """
    import sys, time
    from hermes_audit import AuditWriter

    path, start_at, count, name = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    writer = AuditWriter(path)
    while time.time() < start_at:
        pass
    for i in range(count):
        writer.append({"tool": name, "i": i})
    writer.close()
    """
)


def test_processes_share_one_chain(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    start_at = time.time() + 1.0
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(path), str(start_at), "100", f"p{n}"],
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    report = verify_file(path)
    assert report.ok, report.problems[:5]
    assert report.records == 400
    tools = [json.loads(line)["tool"] for line in read_lines(path)]
    assert {t: tools.count(t) for t in set(tools)} == {"p0": 100, "p1": 100, "p2": 100, "p3": 100}


def test_a_cut_short_line_is_kept_visible_and_the_chain_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    records = write_records(path, 2)
    with path.open("a") as fh:
        fh.write('{"seq": 3, "tool": "crash')
    with AuditWriter(path) as writer:
        record = writer.append({"tool": "after"})
    assert record["seq"] == 3 and record["prev_hash"] == records[-1]["hash"]
    lines = read_lines(path)
    assert len(lines) == 4 and lines[2] == '{"seq": 3, "tool": "crash\n'
    ok, problems = verify_chain(path)
    assert not ok
    assert problems == ["line 3: not valid JSON"]  # the damage is reported; the chain around it holds


def test_another_writer_is_noticed(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditWriter(path) as a, AuditWriter(path) as b:
        assert [a.append({"n": 1})["seq"], b.append({"n": 2})["seq"], a.append({"n": 3})["seq"]] == [1, 2, 3]
    assert verify_chain(path) == (True, [])


@pytest.mark.parametrize("pad", [10, 5000, 40_000])
def test_read_head_finds_the_last_record_across_windows(tmp_path: Path, pad: int) -> None:
    path = tmp_path / "audit.jsonl"
    records = write_records(path, 3, note="x" * pad)
    with path.open("ab") as fh:
        fh.write(b"not json at all\n" * 3 + b"partial")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert read_head(fd, path.stat().st_size) == (3, records[-1]["hash"])
        assert read_head(fd, 0) == (0, "0" * 64)
    finally:
        os.close(fd)


def test_closed_writer_refuses(tmp_path: Path) -> None:
    writer = AuditWriter(tmp_path / "a.jsonl")
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.append({"tool": "x"})


def test_sqlite_mirror_and_sync(tmp_path: Path) -> None:
    path, db = tmp_path / "audit.jsonl", tmp_path / "audit.sqlite3"
    with AuditWriter(path, sqlite=db) as writer:
        for i in range(3):
            writer.append(
                {
                    "time": "2025-01-01T00:00:00Z",
                    "tool": "read_file" if i else "terminal",
                    "status": "ok",
                    "duration_ms": 1.5,
                    "result_chars": 10 * i,
                    "secret_field": "x",
                }
            )
    con = sqlite3.connect(db)
    rows = con.execute("SELECT seq, tool, result_chars FROM calls ORDER BY seq").fetchall()
    assert rows == [(1, "terminal", 0), (2, "read_file", 10), (3, "read_file", 20)]
    head = verify_file(path).head
    assert con.execute("SELECT hash FROM calls WHERE seq = 3").fetchone() == (head,)
    con.close()
    # records written without the mirror are added by a sync, once
    with AuditWriter(path) as writer:
        writer.append({"time": "2025-01-01T00:00:01Z", "tool": "web", "status": "blocked"})
    assert sync_sqlite(path, db) == 1
    assert sync_sqlite(path, db) == 0
    con = sqlite3.connect(db)
    assert con.execute("SELECT count(*), max(seq) FROM calls").fetchone() == (4, 4)
    con.close()
