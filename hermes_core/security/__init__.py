"""The security layer: command and path guards, human approval and the redactor. It fails closed.

``classify_command`` judges shell commands, ``check_path`` judges file paths, ``redact`` strips secrets from
text headed to the model or the logs, and the approval classes decide whether a human said yes.
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
)
from ._command import MAX_COMMAND_CHARS, classify_command, normalize_command
from ._paths import check_path, resolve_path
from ._redact import redact
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
    "CallbackApprover",
    "CommandVerdict",
    "Finding",
    "HeadlessApprover",
    "MalformedPathError",
    "PathVerdict",
    "TerminalApprover",
    "check_path",
    "classify_command",
    "normalize_command",
    "redact",
    "resolve_path",
]
