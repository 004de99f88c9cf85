"""What an agent knows from the start (the built-ins' ``agent_context`` hook): the memory store and an index of
the skills, each only when the agent has the tool to use it, each capped so the system prompt stays small.

Both are read again before every request, from files whose unchanged content gives the same text (so the
provider's prompt cache holds); a memory saved during a session shows in the next request.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_core import Host

    from .tools.work.skills import Skill

MEMORY_CHARS = 3_500
SKILLS_CHARS = 2_000
_DESCRIPTION_CHARS = 120
_LABELS = {"user": "About the user", "notes": "Notes"}


def starting_context(system: Host, tools: frozenset[str]) -> str | None:
    """The sections for ``tools``: the memory (with ``memory``) and the skills index (with ``skill_view``)."""
    sections = []
    if "memory" in tools:
        sections.append(memory_section(system.data_dir))
    if "skill_view" in tools:
        sections.append(skills_section(system))
    text = "\n\n".join(s for s in sections if s)
    return text or None


def memory_section(data_dir: Path) -> str:
    """The memory entries of every target, newest last, cut at ``MEMORY_CHARS`` with a note saying so."""
    from .tools.work._state import read_json
    from .tools.work.memory import TARGETS, TOOLSET, _valid

    lines: list[str] = []
    left = 0
    budget = MEMORY_CHARS
    for target in sorted(TARGETS, key=lambda t: t != "user"):  # what the user said about themselves first
        try:
            entries = _valid(read_json(data_dir / TOOLSET / f"{target}.json", None))["entries"]
        except Exception:  # a corrupt store: the memory tool reports it when used; say nothing here
            continue
        if not entries:
            continue
        head = f"{_LABELS.get(target, target)}:"
        shown = []
        for entry in entries:
            line = f"- [{entry['id']}] {' '.join(entry['content'].split())}"
            if len(line) + 1 > budget - len(head):
                left += 1
                continue
            budget -= len(line) + 1
            shown.append(line)
        if shown:
            budget -= len(head) + 1
            lines += [head, *shown]
    if not lines:
        return ""
    note = f"\n({left} more entries not shown: `memory` with action read lists them all.)" if left else ""
    return (
        "## Memory\nWhat you saved with the memory tool in earlier sessions (ids for replace/remove):\n"
        + "\n".join(lines)
        + note
    )


def skills_section(system: Host) -> str:
    """One line per skill (user skills override bundled ones), cut at ``SKILLS_CHARS``."""
    from .tools.work.skills import BUNDLED_DIR, TOOLSET

    cache: dict[Path, tuple[tuple[int, int], Skill]] = system.stash("agent_context.skills", dict)
    skills = _scan(BUNDLED_DIR, True, cache)
    skills.update(_scan(system.data_dir / TOOLSET, False, cache))
    if not skills:
        return ""
    lines: list[str] = []
    budget = SKILLS_CHARS
    for name, skill in sorted(skills.items()):
        if skill.problem:
            continue
        description = " ".join(skill.description.split())
        if len(description) > _DESCRIPTION_CHARS:
            description = description[: _DESCRIPTION_CHARS - 1] + "…"
        line = f"- {name}: {description}"
        if len(line) + 1 > budget:
            lines.append(f"- ... and {len(skills) - len(lines)} more (skills_list shows all)")
            break
        budget -= len(line) + 1
        lines.append(line)
    return "## Skills\nWhen a task fits one of these, load it with skill_view first:\n" + "\n".join(lines)


def _scan(root: Path, bundled: bool, cache: dict[Path, tuple[tuple[int, int], Any]]) -> dict[str, Skill]:
    """The skills under ``root``; a SKILL.md is parsed again only when its size or mtime changed."""
    from .tools.work.skills import NAME_RE, _read_meta

    found: dict[str, Skill] = {}
    try:
        children = sorted(root.iterdir())
    except OSError:
        return found
    for child in children:
        if not NAME_RE.match(child.name):
            continue
        try:
            st = (child / "SKILL.md").stat()
        except OSError:
            continue
        stamp = (st.st_mtime_ns, st.st_size)
        known = cache.get(child)
        if known is None or known[0] != stamp:
            known = cache[child] = (stamp, _read_meta(child, bundled))
        found[child.name] = known[1]
    return found
