"""What ``hermes env status`` and the doctor say about the environment: which kind, on what, reachable or not
and why, what it guarantees, what persists, and what plugins registered wrongly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._registry import environment_kinds, environment_status
from ._settings import RESERVED_KINDS, settings_kind

__all__ = ["PERSISTS", "Finding", "diagnose", "report"]

PERSISTS = (
    "the working directory (inside the workspace, the session's /tmp and the read_write folders; elsewhere the next "
    "command starts in the workspace)",
    "exported and plain shell variables, unset ones included (a venv's activate and deactivate)",
    "functions, aliases, set and shopt options",
    "background processes started with terminal(background=true), until the session ends",
    "not kept: the shell's own background jobs, traps, the directory stack; a command that times out or is "
    "killed changes nothing",
)


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing the doctor reports: ``severity`` is error, warning or info, with a one-line ``fix``."""

    severity: str
    message: str
    fix: str


def report(host: Any) -> dict[str, Any]:
    """Everything ``hermes env status`` shows, as plain data."""
    status = environment_status(host, refresh=True)
    kinds = environment_kinds(host)
    return {
        "kind": status.kind,
        "configured": settings_kind(host),
        "ready": status.ready,
        "files_ready": status.files_usable,
        "detail": status.detail,
        "reason": status.reason,
        "fix": status.fix,
        "guarantees": list(status.guarantees),
        "limitations": list(status.limitations),
        "persists": list(PERSISTS),
        "kinds": {
            name: ("built in" if name in RESERVED_KINDS else f"plugin {kinds.owners.get(name, '?')}")
            for name in kinds.names()
        },
        "errors": list(kinds.errors),
    }


def diagnose(host: Any) -> list[Finding]:
    """The doctor's findings: an environment that cannot start is an error (with the fix), a plugin kind
    registered wrongly a warning, a working one information."""
    data = report(host)
    out: list[Finding] = []
    if data["ready"]:
        out.append(
            Finding(
                "info", f"sessions run in the {data['kind']} environment ({data['detail']})", "nothing to do"
            )
        )
    else:
        out.append(
            Finding(
                "error",
                f"the {data['kind']} environment cannot start: {data['reason']}; terminal, process and "
                "execute_code are hidden" + ("" if data["files_ready"] else ", and so are the file tools"),
                data["fix"] or "fix [environment] (hermes env status says more)",
            )
        )
    for error in data["errors"]:
        out.append(Finding("warning", error, "fix the plugin's register_environments hook"))
    return out
