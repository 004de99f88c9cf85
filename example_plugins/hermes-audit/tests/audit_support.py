"""Helpers for the hermes-audit tests (a uniquely named module, importable from the test files)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hermes_audit import AuditWriter


def write_records(path: Path, count: int, **extra: Any) -> list[dict[str, Any]]:
    with AuditWriter(path) as writer:
        return [writer.append({"tool": f"tool{i}", "status": "ok", **extra}) for i in range(count)]


def read_lines(path: Path) -> list[str]:
    return path.read_text("utf-8").splitlines(keepends=True)


def write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("".join(lines), "utf-8")


def edit(line: str, **changes: Any) -> str:
    record = json.loads(line)
    record.update(changes)
    return json.dumps(record) + "\n"
