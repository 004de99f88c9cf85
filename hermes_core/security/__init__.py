"""The security layer: command and path guards, human approval and the redactor. It fails closed.

``classify_command`` judges shell commands, ``check_path`` judges file paths, ``redact`` strips secrets from
text headed to the model or the logs, and the approval classes decide whether a human said yes.
``check_url`` and ``NetworkPolicy`` judge outbound URLs (the SSRF guard; ``hermes_core.safehttp`` enforces it).
``protected_roots()`` lists hermes's own state (config, approvals, data, cache, plugins, results) that no tool
may change; ``standing_approvals``/``revoke_approvals`` read and narrow the persisted "always" grants.
"""

from __future__ import annotations

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
from ._command import MAX_COMMAND_CHARS, classify_command, normalize_command
from ._paths import check_path, resolve_path
from ._protected import ProtectedRoot, protect_path, protected_roots
from ._redact import redact
from ._ssrf import BlockedURLError, NetworkPolicy, UrlVerdict, check_url, parse_ip_literal
from ._verdicts import CommandVerdict, Finding, MalformedPathError, PathVerdict

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
