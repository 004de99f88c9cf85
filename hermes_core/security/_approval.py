"""Human approval: requests, approvers, the grant store and the gate that ties them together.

Policy keys (the ``[approvals]`` table of the config; all optional):

- ``dangerous_commands`` (bool, default true): a dangerous command needs approval.
- ``write_outside_workspace`` (bool, default true): writing outside the workspace needs approval.
- ``write_ask_paths`` (bool, default true): writing an "ask" path (rc files, .git/hooks, .env...) needs approval.
- ``read_ask_paths_outside_workspace`` (bool, default true): reading an "ask" path outside the workspace does.
- ``tools`` (list of tool names, default empty): these tools need approval for every call.
- ``always`` (array of tables, written by the store): the persisted "always" grants, one
  ``{ kind, subject, added }`` per line; delete a line to revoke it.

An approval binds to the exact normalized subject and its kind, never to a category. Hardline verdicts are
never approvable. Anything that goes wrong while asking (an exception, a timeout, a bad answer) is a denial.
"""

from __future__ import annotations

import asyncio
import datetime
import inspect
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TextIO, cast

from ._verdicts import CommandVerdict, PathVerdict

__all__ = [
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
]

Answer = Literal["once", "session", "always", "deny"]
ANSWERS: tuple[Answer, ...] = ("once", "session", "always", "deny")


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What a human is asked to approve: ``subject`` is the exact normalized command, resolved path or call."""

    kind: str
    subject: str
    reason: str
    tool_name: str = ""
    session_id: str = "default"


class Approver(Protocol):
    """Answers an approval request with "once", "session", "always" or "deny"."""

    def approve(self, request: ApprovalRequest) -> Answer: ...


def _coerce_answer(value: object) -> Answer:
    if value is True:
        return "once"
    if isinstance(value, str) and value.strip().lower() in ANSWERS:
        return cast(Answer, value.strip().lower())
    return "deny"


class HeadlessApprover:
    """The default when nobody is there to ask: every request is denied."""

    def approve(self, request: ApprovalRequest) -> Answer:
        return "deny"


class CallbackApprover:
    """Asks a host-supplied callback (chat buttons, a web UI). Sync or async; bool or one of the answers."""

    def __init__(self, callback: Callable[[ApprovalRequest], Any], *, timeout: float | None = 300.0) -> None:
        self.callback = callback
        self.timeout = timeout

    def approve(self, request: ApprovalRequest) -> Answer:
        result = self.callback(request)
        if inspect.isawaitable(result):
            result = self._await(result)
        return _coerce_answer(result)

    def _await(self, awaitable: Any) -> Any:
        async def wrapped() -> Any:
            return await asyncio.wait_for(awaitable, self.timeout)

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(wrapped())
        box: dict[str, Any] = {}

        def runner() -> None:
            try:
                box["value"] = asyncio.run(wrapped())
            except BaseException as exc:
                box["error"] = exc

        thread = threading.Thread(target=runner, name="hermes-approval", daemon=True)
        thread.start()
        thread.join(None if self.timeout is None else self.timeout + 1.0)
        if "error" in box:
            raise box["error"]
        return box.get("value", "deny")


_KEYS = {"o": "once", "once": "once", "s": "session", "session": "session", "a": "always", "always": "always",
         "d": "deny", "deny": "deny", "n": "deny", "no": "deny"}  # fmt: skip


class TerminalApprover:
    """Asks on a terminal. Shows the exact subject and reason; nothing is preselected; a timeout denies."""

    def __init__(
        self, *, timeout: float = 60.0, input: TextIO | None = None, output: TextIO | None = None
    ) -> None:
        self.timeout = timeout
        self.input = input if input is not None else sys.stdin
        self.output = output if output is not None else sys.stderr

    def approve(self, request: ApprovalRequest) -> Answer:
        out = self.output
        out.write(
            f"\nApproval needed ({request.kind}{' for ' + request.tool_name if request.tool_name else ''})\n"
            f"  {request.subject}\n  reason: {request.reason}\n"
        )
        deadline = _monotonic() + self.timeout
        for _ in range(3):
            out.write("Allow? [o]nce / [s]ession / [a]lways / [d]eny: ")
            out.flush()
            line = self._readline(deadline - _monotonic())
            if line is None:
                out.write("\nno answer in time: denied\n")
                out.flush()
                return "deny"
            answer = _KEYS.get(line.strip().lower())
            if answer is not None:
                return cast(Answer, answer)
            if line == "":
                return "deny"
            out.write("please answer o, s, a or d\n")
        return "deny"

    def _readline(self, timeout: float) -> str | None:
        if timeout <= 0:
            return None
        try:
            fd = self.input.fileno()
        except (AttributeError, OSError, ValueError):
            fd = -1
        if fd >= 0 and os.name == "posix":
            import select

            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                return None
            return self.input.readline()
        box: list[str] = []
        thread = threading.Thread(target=lambda: box.append(self.input.readline()), daemon=True)
        thread.start()
        thread.join(timeout)
        return box[0] if box else None


def _monotonic() -> float:
    import time

    return time.monotonic()


class ApprovalStore:
    """Grants: "session" ones in memory, "always" ones in the TOML allowlist (re-read when the file changes)."""

    def __init__(self, allowlist_path: Path | None) -> None:
        self.path = Path(allowlist_path) if allowlist_path is not None else None
        self._session: set[tuple[str, str, str]] = set()
        self._always: set[tuple[str, str]] = set()
        self._stamp: tuple[int, int] | None = None
        self._lock = threading.Lock()

    def _reload(self) -> None:
        if self.path is None:
            return
        try:
            st = self.path.stat()
        except OSError:
            self._always = set()
            self._stamp = None
            return
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp == self._stamp:
            return
        import tomlkit

        try:
            doc = tomlkit.parse(self.path.read_text(encoding="utf-8"))
        except Exception:
            self._always = set()
            self._stamp = stamp
            return
        table = doc.get("approvals", {})
        entries = table.get("always", []) if isinstance(table, Mapping) else []
        self._always = {
            (str(e.get("kind", "")), str(e.get("subject", "")))
            for e in entries
            if isinstance(e, Mapping) and e.get("kind") and e.get("subject")
        }
        self._stamp = stamp

    def always_grants(self) -> set[tuple[str, str]]:
        with self._lock:
            self._reload()
            return set(self._always)

    def is_granted(self, request: ApprovalRequest) -> bool:
        with self._lock:
            if (request.session_id, request.kind, request.subject) in self._session:
                return True
            self._reload()
            return (request.kind, request.subject) in self._always

    def grant(self, request: ApprovalRequest, scope: Answer) -> None:
        """Remember a grant: "session" in memory, "always" in the allowlist file; "once" stores nothing."""
        with self._lock:
            if scope == "session":
                self._session.add((request.session_id, request.kind, request.subject))
            elif scope == "always":
                if self.path is None:
                    self._session.add((request.session_id, request.kind, request.subject))
                    return
                self._persist(request)

    def _persist(self, request: ApprovalRequest) -> None:
        import tomlkit

        assert self.path is not None
        text = self.path.read_text(encoding="utf-8") if self.path.exists() else ""
        doc = tomlkit.parse(text)
        if "approvals" not in doc:
            doc.add("approvals", tomlkit.table())
        table = doc["approvals"]
        if "always" not in table:  # type: ignore[operator]
            array = tomlkit.array()
            array.multiline(True)
            table["always"] = array  # type: ignore[index]
        entry = tomlkit.inline_table()
        entry.update(
            {"kind": request.kind, "subject": request.subject, "added": datetime.date.today().isoformat()}
        )
        table["always"].append(entry)  # type: ignore[index]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".approvals-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(tomlkit.dumps(doc))
            os.replace(tmp, self.path)
        except BaseException:
            with _suppress():
                os.unlink(tmp)
            raise
        self._stamp = None
        self._reload()


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class ApprovalPolicy:
    """Which situations need a human; built from the ``[approvals]`` config table (see the module docstring)."""

    dangerous_commands: bool = True
    write_outside_workspace: bool = True
    write_ask_paths: bool = True
    read_ask_paths_outside_workspace: bool = True
    tools: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None) -> ApprovalPolicy:
        cfg = dict(config or {})
        known = {
            "dangerous_commands",
            "write_outside_workspace",
            "write_ask_paths",
            "read_ask_paths_outside_workspace",
        }
        kwargs: dict[str, Any] = {k: bool(cfg[k]) for k in known if k in cfg}
        tools = cfg.get("tools", ())
        if isinstance(tools, str):
            tools = [tools]
        return cls(**kwargs, tools=frozenset(str(t) for t in tools))

    def command_needs_approval(self, verdict: CommandVerdict) -> bool:
        return verdict.dangerous and self.dangerous_commands

    def path_needs_approval(self, verdict: PathVerdict) -> bool:
        """True for "ask" verdicts the policy cares about ("refuse" is never approvable, "allow" never asks)."""
        if verdict.decision != "ask":
            return False
        outside = not verdict.inside_workspace
        if verdict.op == "write":
            generic_outside = verdict.reason.endswith("outside the workspace")
            if generic_outside:
                return self.write_outside_workspace
            return self.write_ask_paths
        return outside and self.read_ask_paths_outside_workspace

    def requires_command_approval(self, verdict: CommandVerdict) -> bool:
        """Alias of ``command_needs_approval`` (the name the pipeline's guard uses)."""
        return self.command_needs_approval(verdict)

    def requires_path_approval(self, op: str, verdict: PathVerdict) -> bool:
        """Whether ``op`` on a path with this verdict needs a human (the pipeline's guard calls this)."""
        if verdict.op != op:
            verdict = PathVerdict(
                verdict.decision, verdict.reason, verdict.resolved, op, verdict.inside_workspace
            )
        return self.path_needs_approval(verdict)

    def tool_needs_approval(self, tool_name: str) -> bool:
        return tool_name in self.tools


class ApprovalGate:
    """Grants first (exact subject), then the approver; hardline or any failure means no."""

    def __init__(
        self, approver: Approver, store: ApprovalStore, policy: ApprovalPolicy | None = None
    ) -> None:
        self.approver = approver
        self.store = store
        self.policy = policy if policy is not None else ApprovalPolicy()

    def check(self, request: ApprovalRequest, *, hardline: bool = False) -> bool:
        """True when the action may go ahead."""
        if hardline:
            return False
        if self.store.is_granted(request):
            return True
        try:
            answer = _coerce_answer(self.approver.approve(request))
        except Exception:
            return False
        if answer == "deny":
            return False
        try:
            self.store.grant(request, answer)
        except Exception:
            # the human said yes; failing to remember it must not turn the answer into a no
            return True
        return True
