"""The verdicts the guards return: ``Finding``, ``CommandVerdict``, ``PathVerdict`` and ``MalformedPathError``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = ["CommandVerdict", "Decision", "Finding", "MalformedPathError", "PathVerdict"]

Decision = Literal["allow", "ask", "refuse"]


class MalformedPathError(ValueError):
    """A path the guard cannot judge (NUL byte, empty, over-long component, lone surrogate)."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One reason a command is dangerous: its ``category``, the offending ``part`` and a ``reason``."""

    category: str
    part: str
    reason: str
    hardline: bool = False


@dataclass(frozen=True, slots=True)
class CommandVerdict:
    """What the command guard thinks of a command.

    ``normalized`` is the exact text an approval binds to. ``hardline`` verdicts can never be approved.
    """

    normalized: str
    findings: tuple[Finding, ...] = ()

    @property
    def dangerous(self) -> bool:
        return bool(self.findings)

    @property
    def hardline(self) -> bool:
        return any(f.hardline for f in self.findings)

    @property
    def categories(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.category for f in self.findings))

    @property
    def reasons(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f"{f.reason} ({f.category}: {f.part})" for f in self.findings))

    @property
    def reason(self) -> str:
        """All reasons in one line ("" when the command is not dangerous)."""
        return "; ".join(self.reasons)


@dataclass(frozen=True, slots=True)
class PathVerdict:
    """What the path guard decided for one path and operation."""

    decision: Decision
    reason: str
    resolved: Path
    op: str = "read"
    inside_workspace: bool = False

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"
