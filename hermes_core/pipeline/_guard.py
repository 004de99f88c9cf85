"""The security gate a ``CallContext`` uses: command and path guards plus the approval flow.

It joins ``hermes_core.security`` (verdicts, approvers, the allowlist) to one tool system's config
and approver. It fails closed: a hardline verdict or a refused path is never approvable, and with
nobody to ask (the headless default) anything that needs approval is denied.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..context import ApprovalDenied, CallContext
from ..errors import ToolError

if TYPE_CHECKING:
    from ..system import ToolSystem

__all__ = ["SecurityGuard"]


class SecurityGuard:
    """Implements the ``Guard`` protocol of ``hermes_core.context`` for one tool system."""

    def __init__(self, system: ToolSystem) -> None:
        from .. import security

        self._security = security
        self.system = system
        self.policy = security.ApprovalPolicy.from_config(system.config.approvals)
        approver = system.approver if system.approver is not None else security.HeadlessApprover()
        allowlist = system.config.path if system.config.path is not None else None
        if allowlist is not None:
            security.protect_path(
                allowlist
            )  # a --config file outside the usual places: never written by a tool
        # standing grants as the config held them at load: later edits of the file never widen them
        self.store = security.ApprovalStore(allowlist, grants=system.config.approvals.get("always", []))
        self.gate = security.ApprovalGate(approver, self.store, self.policy)
        self.results_dir = Path(os.path.realpath(system.results_dir))

    def _ask(
        self, kind: str, subject: str, reason: str, context: CallContext, hardline: bool = False
    ) -> bool:
        request = self._security.ApprovalRequest(
            kind=kind,
            subject=subject,
            reason=reason,
            tool_name=context.tool_name,
            session_id=context.session_id,
        )
        return bool(self.gate.check(request, hardline=hardline))

    def guard_command(self, command: str, context: CallContext) -> Any:
        verdict = self._security.classify_command(command, workspace=context.workspace)
        if not verdict.dangerous:
            return verdict
        reasons = "; ".join(verdict.reasons) or "dangerous command"
        if verdict.hardline:
            raise ApprovalDenied(f"this command is never allowed ({reasons})")
        if not self.policy.requires_command_approval(verdict):
            return verdict
        if not self._ask("command", verdict.normalized, reasons, context):
            raise ApprovalDenied(f"the command needs a human's approval and was not approved ({reasons})")
        return verdict

    def classify_command(self, command: str, workspace: Path) -> Any:
        return self._security.classify_command(command, workspace=workspace)

    def guard_path(self, path: str | Path, op: str, context: CallContext) -> Path:
        try:
            verdict = self._security.check_path(path, op, context.workspace)  # type: ignore[arg-type]
        except ValueError as err:
            raise ToolError(f"invalid path: {err}") from None
        if verdict.decision == "allow":
            return Path(verdict.resolved)
        if verdict.decision == "refuse":
            raise ApprovalDenied(f"{op} of {verdict.resolved} is not allowed: {verdict.reason}")
        if op == "read" and Path(verdict.resolved).is_relative_to(self.results_dir):
            return Path(verdict.resolved)  # full outputs the pipeline saved for the model to page through
        if not self.policy.requires_path_approval(op, verdict):
            return Path(verdict.resolved)
        if not self._ask("path", f"{op} {verdict.resolved}", verdict.reason, context):
            raise ApprovalDenied(
                f"{op} of {verdict.resolved} needs a human's approval and was not approved ({verdict.reason})"
            )
        return Path(verdict.resolved)

    def request_approval(self, kind: str, subject: str, reason: str, context: CallContext) -> None:
        if not self._ask(kind, subject, reason, context):
            raise ApprovalDenied(f"not approved: {reason}")
