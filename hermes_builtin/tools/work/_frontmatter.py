"""A small parser for the front matter of SKILL.md files: ``key: value`` lines between two ``---`` lines.

Supported: plain, single- or double-quoted scalars, ``#`` comment lines, and ``|`` / ``>`` block
scalars or indented continuation lines. Nested mappings and lists are kept as their raw text.
"""

from __future__ import annotations

import re

__all__ = ["FrontMatterError", "parse_front_matter"]

_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\s*:(?:\s+(.*))?$")


class FrontMatterError(ValueError):
    """The document has no front matter or it is malformed."""


def _scalar(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        inner = raw[1:-1]
        return inner.replace("''", "'") if raw[0] == "'" else inner.replace('\\"', '"')
    if " #" in raw:
        raw = raw.split(" #", 1)[0].rstrip()
    return raw


def parse_front_matter(text: str) -> tuple[dict[str, str], str]:
    """Split a document into (front matter fields, body); raises ``FrontMatterError``."""
    text = text.lstrip("\ufeff")
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise FrontMatterError("the file must start with a '---' line opening the front matter")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise FrontMatterError("the front matter is not closed by a '---' line") from None
    fields: dict[str, str] = {}
    key: str | None = None
    block: str | None = None  # "|" keeps newlines, ">" and plain continuation fold them
    for number, line in enumerate(lines[1:end], 2):
        if not line.strip() or (line.lstrip().startswith("#") and not line.startswith((" ", "\t"))):
            if block == "|" and key is not None and not line.strip():
                fields[key] += "\n"
            continue
        if line.startswith((" ", "\t")):
            if key is None:
                raise FrontMatterError(f"line {number}: indented text before any key")
            sep = "\n" if block == "|" else " "
            fields[key] = (fields[key] + sep + line.strip()) if fields[key] else line.strip()
            continue
        match = _KEY.match(line.rstrip())
        if match is None:
            raise FrontMatterError(f"line {number}: expected 'key: value', got {line.strip()[:60]!r}")
        key, value = match.group(1), (match.group(2) or "").strip()
        if key in fields:
            raise FrontMatterError(f"line {number}: duplicate key {key!r}")
        if value in ("|", ">", "|-", ">-"):
            block, fields[key] = value[0], ""
        else:
            block, fields[key] = None, _scalar(value)
    fields = {k: v.strip() for k, v in fields.items()}
    body = "\n".join(lines[end + 1 :])
    return fields, body
