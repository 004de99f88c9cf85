"""The hash chain: a clean file verifies; edits, deletions, insertions, reordering and cuts are caught."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from audit_support import edit, read_lines, write_lines, write_records
from hermes_audit import canonical, record_hash, verify_chain, verify_file
from hermes_audit.chain import GENESIS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def test_clean_chain_verifies(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    records = write_records(path, 5)
    assert verify_chain(path) == (True, [])
    assert [r["seq"] for r in records] == [1, 2, 3, 4, 5]
    assert records[0]["prev_hash"] == GENESIS
    assert all(b["prev_hash"] == a["hash"] for a, b in itertools.pairwise(records))
    report = verify_file(path)
    assert report.records == 5 and report.head == records[-1]["hash"]
    # each line is exactly the canonical JSON of its record
    for line, record in zip(read_lines(path), records, strict=True):
        assert line == canonical(record) + "\n"
        assert record_hash(json.loads(line)) == record["hash"]


def test_empty_file_is_a_valid_chain(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_text("")
    assert verify_chain(path) == (True, [])


def test_missing_file_is_reported(tmp_path: Path) -> None:
    ok, problems = verify_chain(tmp_path / "nope.jsonl")
    assert not ok and "no such file" in problems[0]


def test_edited_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    write_records(path, 4)
    lines = read_lines(path)
    lines[2] = edit(lines[2], status="error")
    write_lines(path, lines)
    ok, problems = verify_chain(path)
    assert not ok
    assert problems == ["line 3 (seq 3): hash mismatch, the record was edited"]


def test_edit_with_recomputed_hash_breaks_the_next_link(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    write_records(path, 4)
    lines = read_lines(path)
    forged = json.loads(lines[1])
    forged["tool"] = "innocent"
    forged["hash"] = record_hash(forged)
    lines[1] = canonical(forged) + "\n"
    write_lines(path, lines)
    ok, problems = verify_chain(path)
    assert not ok
    assert len(problems) == 1 and problems[0].startswith("line 3 (seq 3): prev_hash does not match")


def test_deleted_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    write_records(path, 5)
    lines = read_lines(path)
    del lines[1]
    write_lines(path, lines)
    ok, problems = verify_chain(path)
    assert not ok
    assert any("prev_hash does not match" in p for p in problems)
    assert any("seq 3 follows 1 (expected 2)" in p for p in problems)


def test_deleted_first_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    write_records(path, 3)
    write_lines(path, read_lines(path)[1:])
    ok, problems = verify_chain(path)
    assert not ok and any("line 1 (seq 2): prev_hash" in p for p in problems)


def test_reordered_lines(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    write_records(path, 4)
    lines = read_lines(path)
    lines[1], lines[2] = lines[2], lines[1]
    write_lines(path, lines)
    ok, problems = verify_chain(path)
    assert not ok
    assert any("seq 3 follows 1" in p for p in problems)
    assert not any("hash mismatch" in p for p in problems)  # each line is intact; only the order is wrong


def test_inserted_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    records = write_records(path, 3)
    lines = read_lines(path)
    fake = {"seq": 2, "tool": "x", "status": "ok", "prev_hash": records[0]["hash"]}
    fake["hash"] = record_hash(fake)
    lines.insert(1, canonical(fake) + "\n")
    write_lines(path, lines)
    ok, problems = verify_chain(path)
    assert not ok
    assert any("line 3 (seq 2): prev_hash" in p for p in problems)


def test_garbage_and_cut_lines(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    write_records(path, 2)
    with path.open("a") as fh:
        fh.write('{"seq": 3, "tool": "cut sho')
    ok, problems = verify_chain(path)
    assert not ok
    assert "line 3: incomplete last line" in problems[0] and "line 3: not valid JSON" in problems[1]
    write_lines(path, [*read_lines(path)[:2], "[1, 2]\n"])
    assert verify_chain(path)[1] == ["line 3: not an audit record"]


def test_truncation_is_caught_with_an_anchor(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    records = write_records(path, 5)
    anchor = records[-1]["hash"]
    assert verify_file(path, anchor=anchor).ok
    write_lines(path, read_lines(path)[:3])
    assert verify_chain(path) == (True, [])  # a clean cut at the end is invisible without an anchor
    report = verify_file(path, anchor=anchor)
    assert not report.ok and report.anchor_found is False
    assert "is not in the chain" in report.problems[0]


@pytest.mark.parametrize("value", [{"b": 1, "a": [1, 2]}, {"a": [1, 2], "b": 1}])
def test_canonical_json_ignores_key_order(value: dict) -> None:
    assert canonical(value) == '{"a":[1,2],"b":1}'


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    count=st.integers(min_value=2, max_value=8),
    data=st.data(),
)
def test_any_single_tampering_is_detected(tmp_path: Path, count: int, data: st.DataObject) -> None:
    path = tmp_path / f"audit-{count}-{id(data)}.jsonl"
    path.unlink(missing_ok=True)
    write_records(path, count)
    lines = read_lines(path)
    i = data.draw(st.integers(min_value=0, max_value=count - 1), label="line")
    action = data.draw(st.sampled_from(["edit", "delete", "duplicate", "swap"]), label="action")
    if action == "edit":
        key = data.draw(st.sampled_from(["tool", "status", "seq", "prev_hash"]), label="key")
        value = data.draw(st.one_of(st.text(max_size=5), st.integers()), label="value")
        if json.loads(lines[i]).get(key) == value:
            return
        lines[i] = edit(lines[i], **{key: value})
    elif action == "delete":
        if i == count - 1:
            i = 0  # cutting the last line is only caught with an anchor (tested above)
        del lines[i]
    elif action == "duplicate":
        lines.insert(i, lines[i])
    else:
        j = data.draw(st.integers(min_value=0, max_value=count - 1).filter(lambda j: j != i), label="other")
        lines[i], lines[j] = lines[j], lines[i]
    write_lines(path, lines)
    ok, problems = verify_chain(path)
    assert not ok and problems
