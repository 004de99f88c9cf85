"""The security layer: command and path guards, human approval and the redactor. It fails closed.

``classify_command`` judges shell commands, ``check_path`` judges file paths, ``redact`` strips secrets from
text headed to the model or the logs, and the approval classes decide whether a human said yes.
``check_url`` and ``NetworkPolicy`` judge outbound URLs (the SSRF guard; ``hermes_core.safehttp`` enforces it).
``protected_roots()`` lists hermes's own state (config, approvals, data, cache, plugins, results) that no tool
may change; ``standing_approvals``/``revoke_approvals`` read and narrow the persisted "always" grants.
``PathJudge`` judges many paths of one listing or search at once, with ``check_path``'s verdicts.

Each name loads its own module on first use (``from hermes_core.security import NetworkPolicy`` does not load
the command guard's shell parser), so a tool's check that needs one guard does not pay for all of them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._approval import (
        ANSWERS,
        Answer,
        ApprovalGate,
        ApprovalPolicy,
        ApprovalRequest,
        ApprovalStore,
        Approver,
        CallbackApprover,
        HeadlessApprover,
        TerminalApprover,
        revoke_approvals,
        standing_approvals,
    )
    from ._bulk import PathJudge
    from ._command import MAX_COMMAND_CHARS, classify_command, normalize_command
    from ._paths import check_path, resolve_path
    from ._protected import ProtectedRoot, protect_path, protected_roots
    from ._redact import redact
    from ._ssrf import BlockedURLError, NetworkPolicy, UrlVerdict, check_url, parse_ip_literal
    from ._verdicts import CommandVerdict, Finding, MalformedPathError, PathVerdict

_HOMES = {
    "_approval": (
        "ANSWERS",
        "Answer",
        "ApprovalGate",
        "ApprovalPolicy",
        "ApprovalRequest",
        "ApprovalStore",
        "Approver",
        "CallbackApprover",
        "HeadlessApprover",
        "TerminalApprover",
        "revoke_approvals",
        "standing_approvals",
    ),
    "_bulk": ("PathJudge",),
    "_command": ("MAX_COMMAND_CHARS", "classify_command", "normalize_command"),
    "_paths": ("check_path", "resolve_path"),
    "_protected": ("ProtectedRoot", "protect_path", "protected_roots"),
    "_redact": ("redact",),
    "_ssrf": ("BlockedURLError", "NetworkPolicy", "UrlVerdict", "check_url", "parse_ip_literal"),
    "_verdicts": ("CommandVerdict", "Finding", "MalformedPathError", "PathVerdict"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "ANSWERS",
    "MAX_COMMAND_CHARS",
    "Answer",
    "ApprovalGate",
    "ApprovalPolicy",
    "ApprovalRequest",
    "ApprovalStore",
    "Approver",
    "BlockedURLError",
    "CallbackApprover",
    "CommandVerdict",
    "Finding",
    "HeadlessApprover",
    "MalformedPathError",
    "NetworkPolicy",
    "PathJudge",
    "PathVerdict",
    "ProtectedRoot",
    "TerminalApprover",
    "UrlVerdict",
    "check_path",
    "check_url",
    "classify_command",
    "normalize_command",
    "parse_ip_literal",
    "protect_path",
    "protected_roots",
    "redact",
    "resolve_path",
    "revoke_approvals",
    "standing_approvals",
]


def __getattr__(name: str) -> Any:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'hermes_core.security' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later look-ups cost a dict's
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
