"""The hash chain: canonical JSON, record hashes, and ``verify_chain`` to find tampering.

Each line is one JSON object. ``hash`` is the SHA-256 of the canonical JSON of the line without its
``hash`` field; that text includes ``prev_hash``, the hash of the line before (64 zeros for the first), and
``seq``, which counts up from 1. Editing a line breaks its hash; deleting, inserting or reordering lines
breaks the next line's ``prev_hash`` and the ``seq`` sequence.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["GENESIS", "ChainReport", "canonical", "record_hash", "verify_chain", "verify_file"]

GENESIS = "0" * 64


def canonical(value: Any) -> str:
    """Canonical JSON: sorted keys, no spaces, UTF-8 kept, non-JSON values as strings."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def record_hash(record: Mapping[str, Any]) -> str:
    """The SHA-256 of a record's canonical JSON without its ``hash`` field."""
    import hashlib

    body = {k: v for k, v in record.items() if k != "hash"}
    return hashlib.sha256(canonical(body).encode("utf-8")).hexdigest()


@dataclass(slots=True)
class ChainReport:
    """What ``verify_file`` found: record count, the last good hash, problems, and whether an anchor matched."""

    records: int = 0
    head: str = GENESIS
    problems: list[str] = field(default_factory=list)
    anchor_found: bool | None = None

    @property
    def ok(self) -> bool:
        return not self.problems


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with path.open("rb") as fh:
        yield from enumerate(fh, start=1)


def verify_file(path: str | Path, anchor: str | None = None) -> ChainReport:
    """Check every line of an audit file; ``anchor`` is a hash recorded elsewhere that must still be there."""
    report = ChainReport(anchor_found=False if anchor else None)
    path = Path(path)
    if not path.exists():
        report.problems.append(f"{path}: no such file")
        return report
    prev_hash, prev_seq = GENESIS, 0
    for lineno, raw in _lines(path):
        where = f"line {lineno}"
        if not raw.endswith(b"\n"):
            report.problems.append(
                f"{where}: incomplete last line (a write was cut short or the file truncated)"
            )
        try:
            record = json.loads(raw)
        except ValueError:
            report.problems.append(f"{where}: not valid JSON")
            continue
        if not isinstance(record, dict) or not isinstance(record.get("hash"), str):
            report.problems.append(f"{where}: not an audit record")
            continue
        report.records += 1
        seq, stored = record.get("seq"), record["hash"]
        if record_hash(record) != stored:
            report.problems.append(f"{where} (seq {seq}): hash mismatch, the record was edited")
        if record.get("prev_hash") != prev_hash:
            report.problems.append(
                f"{where} (seq {seq}): prev_hash does not match the line before; lines were deleted, "
                "inserted or reordered"
            )
        if not isinstance(seq, int) or isinstance(seq, bool):
            report.problems.append(f"{where}: seq is missing or not an integer")
        elif seq != prev_seq + 1:
            report.problems.append(f"{where}: seq {seq} follows {prev_seq} (expected {prev_seq + 1})")
        if anchor is not None and stored == anchor:
            report.anchor_found = True
        prev_hash = stored
        prev_seq = seq if isinstance(seq, int) and not isinstance(seq, bool) else prev_seq + 1
    report.head = prev_hash
    if anchor is not None and not report.anchor_found:
        report.problems.append(f"anchor {anchor} is not in the chain; records were removed or rewritten")
    return report


def verify_chain(path: str | Path) -> tuple[bool, list[str]]:
    """Verify an audit file: ``(ok, problems)``; each problem names the line and what is wrong."""
    report = verify_file(path)
    return report.ok, report.problems
