"""What the doctor finds: one ``Problem`` per finding, gathered in a ``DoctorReport``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["DoctorReport", "Problem", "unique"]


@dataclass(slots=True)
class Problem:
    """One finding: ``severity`` is error (unhealthy), warning or info; ``fix`` is one line a user can act on."""

    severity: str
    plugin: str
    check: str
    message: str
    fix: str

    def __post_init__(self) -> None:
        self.message = " ".join(self.message.split())  # one line each, whatever the error text looked like
        self.fix = " ".join(self.fix.split())

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(slots=True)
class DoctorReport:
    """The plugins checked (one dict each, as ``hermes plugins doctor --json`` prints them) and the problems."""

    plugins: list[dict[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No error was found (warnings and notes do not count)."""
        return not any(p.severity == "error" for p in self.problems)

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "plugins": self.plugins, "problems": [p.as_dict() for p in self.problems]}


def unique(problems: list[Problem]) -> list[Problem]:
    """Each problem once: the same finding reached by two checks (a plugin's load error and its isolated
    import, a clash seen from both plugins) is reported by the first."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for problem in problems:
        key = (problem.severity, problem.plugin, problem.message)
        if key not in seen:
            seen.add(key)
            out.append(problem)
    return out
