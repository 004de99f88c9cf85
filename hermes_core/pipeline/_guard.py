"""The security gate a ``CallContext`` uses: command and path guards plus the approval flow.

It joins ``hermes_core.security`` (verdicts, approvers, the allowlist) to one tool system's config
and approver. It fails closed: a hardline verdict or a refused path is never approvable, and with
nobody to ask (the headless default) anything that needs approval is denied.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..context import ApprovalDenied, CallContext, Guard
from ..errors import ToolError

if TYPE_CHECKING:
    from ..config import Config

__all__ = ["LazyGuard", "SecurityGuard"]


class SecurityGuard:
    """Implements the ``Guard`` protocol of ``hermes_core.context`` for one tool system: its configuration, its
    approver (a call's own approver, ``context.approver``, asks instead when there is one) and the folder of
    saved results (readable without approval)."""

    def __init__(self, config: Config, approver: Any, results_dir: Path) -> None:
        from .. import security

        self._security = security
        self.policy = security.ApprovalPolicy.from_config(config.approvals)
        approver = approver if approver is not None else security.HeadlessApprover()
        allowlist = config.path
        if allowlist is not None:
            security.protect_path(
                allowlist
            )  # a --config file outside the usual places: never written by a tool
        # standing grants as the config held them at load: later edits of the file never widen them
        self.store = security.ApprovalStore(allowlist, grants=config.approvals.get("always", []))
        self.gate = security.ApprovalGate(approver, self.store, self.policy)
        self.results_dir = Path(os.path.realpath(results_dir))
        sandbox = config.data.get("sandbox")
        host_run = sandbox.get("host_run") if isinstance(sandbox, dict) else None
        # files the host runs later, as configured for the sandbox: writing one asks (the default list is in
        # check_path already)
        self.host_run: tuple[str, ...] = tuple(host_run) if isinstance(host_run, list) else ()

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
        return bool(self.gate.check(request, hardline=hardline, approver=context.approver))

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
        if verdict.decision == "allow" and op == "write" and self.host_run and verdict.inside_workspace:
            from ..sandbox._hostrun import host_run_match

            if host_run_match(verdict.resolved, [Path(os.path.realpath(context.workspace))], self.host_run):
                verdict = self._security.PathVerdict(
                    "ask",
                    f"write {verdict.resolved}: a file the host runs later ([sandbox] host_run)",
                    verdict.resolved,
                    "write",
                    True,
                )
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

    def forget_session(self, session_id: str) -> None:
        """A session ended: its "session" approvals end with it."""
        self.store.forget_session(session_id)


class LazyGuard:
    """A ``Guard`` that builds the real one on first use (the security layer costs start-up), or forwards to the
    one given to ``use()`` (``ToolSystem.guard = ...``: tests, hosts with a policy of their own)."""

    __slots__ = ("_build", "_target")

    def __init__(self, build: Callable[[], Guard]) -> None:
        self._build = build
        self._target: Guard | None = None

    @property
    def target(self) -> Guard:
        target = self._target
        if target is None:
            target = self._target = self._build()
        return target

    def use(self, guard: Guard) -> None:
        self._target = guard

    def guard_command(self, command: str, context: CallContext) -> Any:
        return self.target.guard_command(command, context)

    def guard_path(self, path: str | Path, op: str, context: CallContext) -> Path:
        return self.target.guard_path(path, op, context)

    def request_approval(self, kind: str, subject: str, reason: str, context: CallContext) -> None:
        self.target.request_approval(kind, subject, reason, context)

    def classify_command(self, command: str, workspace: Path) -> Any:
        return self.target.classify_command(command, workspace)

    def forget_session(self, session_id: str) -> None:
        """Forget a closed session's "session" approvals (when the guard was built and can)."""
        forget = getattr(self._target, "forget_session", None)
        if forget is not None:
            forget(session_id)
