"""The security layer: command and path guards, human approval and the redactor. It fails closed.

``classify_command`` judges shell commands, ``check_path`` judges file paths, ``redact`` strips secrets from
text headed to the model or the logs, and the approval classes decide whether a human said yes.
"""

from __future__ import annotations

from ._command import classify_command, normalize_command
from ._verdicts import CommandVerdict, Finding, MalformedPathError, PathVerdict

__all__ = [
    "CommandVerdict",
    "Finding",
    "MalformedPathError",
    "PathVerdict",
    "classify_command",
    "normalize_command",
]
