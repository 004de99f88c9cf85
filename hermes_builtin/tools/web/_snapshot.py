"""Compact accessibility snapshots: Playwright's AI snapshot (``- role "name" [ref=e5]``) with less noise.

Compacting drops ``[cursor=pointer]``/``[active]`` marks, folds a link's ``/url:`` child into its line
(``- link "Docs" [ref=e7] -> /docs``) and removes unnamed ``generic`` wrappers, lifting their children.
The result is cut at a character budget on a line boundary, with a note saying so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_NOISE = re.compile(r" \[(?:cursor=pointer|active)\]")
_WRAPPER = re.compile(r"^- generic \[ref=[a-z0-9]+\]:$")
_URL = re.compile(r"^- /url: ?(.*)$")
_REF = re.compile(r"\[ref=([a-z0-9]+)\]")


@dataclass
class _Node:
    text: str
    children: list[_Node] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)  # continuation lines that are not list items


def _parse(snapshot: str) -> list[_Node]:
    root = _Node("")
    stack: list[tuple[int, _Node]] = [(-1, root)]
    for raw in snapshot.splitlines():
        if not raw.strip():
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        text = raw.strip()
        if not text.startswith("- "):
            stack[-1][1].extra.append(text)
            continue
        while stack[-1][0] >= indent:
            stack.pop()
        node = _Node(text)
        stack[-1][1].children.append(node)
        stack.append((indent, node))
    return root.children


def _compact(nodes: list[_Node]) -> list[_Node]:
    out: list[_Node] = []
    for node in nodes:
        node.text = _NOISE.sub("", node.text)
        kept: list[_Node] = []
        for child in node.children:
            url = _URL.match(child.text)
            if url and not child.children:
                target = url.group(1).strip().strip('"')
                node.text = node.text.rstrip(":") + (f" -> {target}" if target else "")
                continue
            kept.append(child)
        node.children = _compact(kept)
        if _WRAPPER.match(node.text) and not node.extra:
            out.extend(node.children)
            continue
        if node.text.endswith(":") and not node.children and not node.extra:
            node.text = node.text[:-1]
        elif node.children and not node.text.endswith(":") and " -> " in node.text:
            node.text += ":"
        out.append(node)
    return out


def _render(nodes: list[_Node], depth: int, lines: list[str]) -> None:
    for node in nodes:
        pad = "  " * depth
        lines.append(pad + node.text)
        lines.extend(pad + "  " + e for e in node.extra)
        _render(node.children, depth + 1, lines)


def compact(snapshot: str) -> str:
    """The compact form of an AI snapshot (see the module docstring)."""
    lines: list[str] = []
    _render(_compact(_parse(snapshot)), 0, lines)
    return "\n".join(lines)


def refs(snapshot: str) -> set[str]:
    """The element refs a snapshot mentions."""
    return set(_REF.findall(snapshot))


def cut(text: str, budget: int, hint: str) -> str:
    """``text`` cut to ``budget`` characters on a line boundary, with ``hint`` saying how to see the rest."""
    if len(text) <= budget:
        return text
    end = text.rfind("\n", 0, budget)
    end = end if end > 0 else budget
    return text[:end] + f"\n[snapshot cut at {end:,} of {len(text):,} characters; {hint}]"
