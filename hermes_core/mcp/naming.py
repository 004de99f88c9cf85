"""Registered names for MCP tools: safe for every provider, qualified per server on a clash, never random.

A server's tools keep their own names (made provider-safe: ``a.b`` -> ``a_b``) unless the name clashes: with a
tool of another configured server, or with a built-in or plugin tool. Then the name is qualified with the server,
``<server>_<tool>``, for every server that offers it, so the result depends only on what the servers offer, not
on which connected first. A server's ``prefix`` setting replaces the automatic rule: every tool of that server
is ``<prefix><tool>`` (``prefix = ""`` keeps bare names: a server without a prefix that offers the same name
yields and is qualified). A name that is still taken twice after that is left out for every claimant and
reported, never handed to one of them at random.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_NAME", "NamePlan", "ServerTools", "plan_names", "safe_tool_name", "unique_name"]

MAX_NAME = 64
_BAD_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def safe_tool_name(name: str) -> str:
    """A name every provider accepts (letters, digits, ``_``, ``-``; 64 chars; no leading digit or dash)."""
    out = _BAD_CHARS.sub("_", name)[:MAX_NAME] or "tool"
    if not (out[0].isalpha() or out[0] == "_"):
        out = ("_" + out)[:MAX_NAME]
    return out


def unique_name(base: str, taken: Mapping[str, object]) -> str:
    """``base``, or ``base_2``, ``base_3``... (kept within the length limit), whichever is free first."""
    if base not in taken:
        return base
    number = 2
    while True:
        suffix = f"_{number}"
        candidate = base[: MAX_NAME - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
        number += 1


@dataclass(frozen=True, slots=True)
class ServerTools:
    """What naming needs to know of one server: its name, its ``prefix`` setting and its tools' names."""

    server: str
    prefix: str | None
    tools: Sequence[str]


@dataclass(slots=True)
class NamePlan:
    """Per server: registered name -> the server's tool name, the tools left out (with why) and the clashes."""

    names: dict[str, dict[str, str]] = field(default_factory=dict)
    skipped: dict[str, dict[str, str]] = field(default_factory=dict)
    clashes: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def plan_names(servers: Sequence[ServerTools], taken: Mapping[str, str]) -> NamePlan:
    """Name every tool of every server; ``taken`` maps the names of non-MCP tools to their toolsets."""
    bases: dict[str, dict[str, str]] = {}  # server -> {provider-safe base name: tool name}
    for s in servers:
        seen: dict[str, str] = {}
        for tool in s.tools:
            seen[unique_name(safe_tool_name(tool), seen)] = tool
        bases[s.server] = seen
    offered: dict[str, list[str]] = {}  # base name -> the servers without a prefix that offer it
    fixed: dict[str, list[str]] = {}  # name -> the servers with a prefix whose tool gets exactly this name
    for s in servers:
        for base in bases[s.server]:
            if s.prefix is None:
                offered.setdefault(base, []).append(s.server)
            else:
                fixed.setdefault(safe_tool_name(s.prefix + base), []).append(s.server)
    plan = NamePlan()
    for s in servers:
        names: dict[str, str] = {}
        clashes: list[dict[str, Any]] = []
        for base, tool in bases[s.server].items():
            if s.prefix is not None:
                local = safe_tool_name(s.prefix + base)
            else:
                others = [o for o in offered.get(base, ()) if o != s.server] + fixed.get(base, [])
                rivals = [f"MCP server {o!r}" for o in others]
                if base in taken:
                    rivals.append(f"toolset {taken[base]!r}")
                local = safe_tool_name(f"{s.server}_{base}") if rivals else base
                if rivals:
                    clashes.append({"tool": tool, "name": local, "with": rivals})
            names[unique_name(local, names)] = tool
        plan.names[s.server] = names
        plan.clashes[s.server] = clashes
        plan.skipped[s.server] = {}
    claims = Counter(local for names in plan.names.values() for local in names)
    for s in servers:
        names = plan.names[s.server]
        for local in [n for n in names if claims[n] > 1 or n in taken]:
            tool = names.pop(local)
            owner = f"toolset {taken[local]!r}" if local in taken else "another MCP server's tool"
            plan.skipped[s.server][tool] = (
                f"its name {local!r} is also taken by {owner}; set a distinct prefix in [mcp.servers.{s.server}]"
            )
    return plan
