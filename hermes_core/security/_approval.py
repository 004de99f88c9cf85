"""Human approval: requests, approvers, the grant store and the gate that ties them together.

Policy keys (the ``[approvals]`` table of the config; all optional):

- ``dangerous_commands`` (bool, default true): a dangerous command needs approval.
- ``write_outside_workspace`` (bool, default true): writing outside the workspace needs approval.
- ``write_ask_paths`` (bool, default true): writing an "ask" path (rc files, .git/hooks, .env...) needs approval.
- ``read_ask_paths_outside_workspace`` (bool, default true): reading an "ask" path outside the workspace does.
- ``tools`` (list of tool names, default empty): these tools need approval for every call.
- ``always`` (array of tables, written by the store): the persisted "always" grants, one
  ``{ kind, subject, added }`` per line; ``hermes approvals list|revoke`` (or deleting a line) manages them.
  They are read when the system loads; a grant added to the file later is ignored until the next load, a
  grant removed from it is revoked at once.

An approval binds to the exact normalized subject and its kind, never to a category. Hardline verdicts are
never approvable. Anything that goes wrong while asking (an exception, a timeout, a bad answer) is a denial.
"""

from __future__ import annotations

import datetime
import inspect
import os
import sys
import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TextIO, cast

from .._aio.cancel import current_token
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
    "revoke_approvals",
    "standing_approvals",
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
        import asyncio  # only callbacks that are coroutines need it; the security layer loads without it

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
                token = current_token()
                cancelled = token is not None and token.cancelled
                out.write("\ncancelled: denied\n" if cancelled else "\nno answer in time: denied\n")
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

            token = current_token()  # the run asking; once it is cancelled, nobody may answer this prompt
            deadline = _monotonic() + timeout
            while True:
                left = deadline - _monotonic()
                if left <= 0 or (token is not None and token.cancelled):
                    return None
                ready, _, _ = select.select([fd], [], [], min(left, 0.1))
                if ready:
                    return self.input.readline()
        box: list[str] = []
        thread = threading.Thread(target=lambda: box.append(self.input.readline()), daemon=True)
        thread.start()
        thread.join(timeout)
        return box[0] if box else None


def _monotonic() -> float:
    import time

    return time.monotonic()


Grant = tuple[str, str]  # (kind, subject)


def _grants_of(entries: object) -> set[Grant]:
    if not isinstance(entries, list):
        return set()
    return {
        (str(e.get("kind", "")), str(e.get("subject", "")))
        for e in entries
        if isinstance(e, Mapping) and e.get("kind") and e.get("subject")
    }


def _read_document(path: Path) -> Any:
    import tomlkit

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    return tomlkit.parse(text)


def _always_entries(doc: Any) -> list[Any]:
    table = doc.get("approvals", {})
    entries = table.get("always", []) if isinstance(table, Mapping) else []
    return list(entries) if isinstance(entries, list) else []


def standing_approvals(path: str | os.PathLike[str]) -> list[dict[str, str]]:
    """The "always" grants stored in the config file at ``path``: ``{kind, subject, added}`` each, in order."""
    try:
        doc = _read_document(Path(path))
    except Exception as exc:  # tomlkit's parse errors carry the line and column
        raise ValueError(f"{path}: invalid TOML: {exc}") from None
    return [
        {
            "kind": str(e.get("kind", "")),
            "subject": str(e.get("subject", "")),
            "added": str(e.get("added", "")),
        }
        for e in _always_entries(doc)
        if isinstance(e, Mapping)
    ]


def _rewrite_always(path: Path, change: Callable[[list[Any]], list[Any]]) -> None:
    """Read-modify-write the ``[approvals] always`` array of ``path``, keeping comments, atomically, under
    the config file's write lock (shared with ``hermes_core.config.update_config``)."""
    import tomlkit

    from ..config import _write_lock
    from ..fileio import atomic_write

    path.parent.mkdir(parents=True, exist_ok=True)
    with _write_lock(path):
        doc = _read_document(path)
        if "approvals" not in doc:
            doc.add("approvals", tomlkit.table())
        array = tomlkit.array()
        array.multiline(True)
        for entry in change(_always_entries(doc)):
            array.append(entry)
        doc["approvals"]["always"] = array  # type: ignore[index]
        atomic_write(path, tomlkit.dumps(doc))


def revoke_approvals(
    path: str | os.PathLike[str],
    *,
    indexes: Collection[int] = (),
    subjects: Collection[str] = (),
    everything: bool = False,
) -> list[dict[str, str]]:
    """Remove "always" grants from the config file: by 1-based position (as ``standing_approvals`` lists them),
    by exact subject, or all of them. Returns the removed grants."""
    removed: list[dict[str, str]] = []

    def change(entries: list[Any]) -> list[Any]:
        kept = []
        for number, entry in enumerate(entries, 1):
            fields = entry if isinstance(entry, Mapping) else {}
            subject = str(fields.get("subject", ""))
            if everything or number in indexes or subject in subjects:
                removed.append(
                    {
                        "kind": str(fields.get("kind", "")),
                        "subject": subject,
                        "added": str(fields.get("added", "")),
                    }
                )
                continue
            kept.append(entry)
        return kept

    target = Path(path)
    if target.exists():
        _rewrite_always(target, change)
    return removed


class ApprovalStore:
    """Grants: "session" ones in memory, "always" ones in the config file's ``[approvals] always`` list.

    The standing grants are read once, at load (``grants``: the list the loaded config holds; else the file is
    read now). Edits of the file during the session can only narrow them: a grant is in force while it is in
    the file, and a grant someone else adds to the file is not picked up before the next load.
    """

    def __init__(self, allowlist_path: Path | None, *, grants: object = None) -> None:
        self.path = Path(allowlist_path) if allowlist_path is not None else None
        self._session: set[tuple[str, str, str]] = set()
        self._added: set[Grant] = set()  # "always" answers given in this session
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._on_file: set[Grant] = set()
        self._loaded = _grants_of(grants) if grants is not None else self._file_grants()

    def _file_grants(self) -> set[Grant]:
        """The grants in the file now (parsed again only when it changed)."""
        if self.path is None:
            return set()
        try:
            st = self.path.stat()
        except OSError:
            self._stamp, self._on_file = None, set()
            return set()
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if stamp != self._stamp:
            try:
                self._on_file = _grants_of(_always_entries(_read_document(self.path)))
            except Exception:
                self._on_file = set()  # unreadable: nothing is granted (fail closed)
            self._stamp = stamp
        return self._on_file

    def _in_force(self) -> set[Grant]:
        granted = self._loaded | self._added
        if self.path is None:
            return granted
        return granted & self._file_grants()

    def always_grants(self) -> set[tuple[str, str]]:
        """The standing ("always") grants in force now."""
        with self._lock:
            return set(self._in_force())

    def is_granted(self, request: ApprovalRequest) -> bool:
        with self._lock:
            if (request.session_id, request.kind, request.subject) in self._session:
                return True
            return (request.kind, request.subject) in self._in_force()

    def grant(self, request: ApprovalRequest, scope: Answer) -> None:
        """Remember a grant: "session" in memory, "always" in the config file; "once" stores nothing."""
        with self._lock:
            if scope == "session":
                self._session.add((request.session_id, request.kind, request.subject))
            elif scope == "always":
                if self.path is None:
                    self._session.add((request.session_id, request.kind, request.subject))
                    return
                self._persist(request)
                self._added.add((request.kind, request.subject))

    def _persist(self, request: ApprovalRequest) -> None:
        import tomlkit

        assert self.path is not None
        entry = tomlkit.inline_table()
        entry.update(
            {"kind": request.kind, "subject": request.subject, "added": datetime.date.today().isoformat()}
        )
        _rewrite_always(self.path, lambda entries: [*entries, entry])


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

    def check(
        self, request: ApprovalRequest, *, hardline: bool = False, approver: Approver | None = None
    ) -> bool:
        """True when the action may go ahead; ``approver`` (the call's own) asks instead of the gate's."""
        if hardline:
            return False
        token = current_token()  # the agent turn asking: once it is cancelled, every answer is no
        if token is not None and token.cancelled:
            return False
        if self.store.is_granted(request):
            return True
        try:
            answer = _coerce_answer((approver if approver is not None else self.approver).approve(request))
        except Exception:
            return False
        if answer == "deny" or (token is not None and token.cancelled):
            return False
        try:
            self.store.grant(request, answer)
        except Exception:
            # the human said yes; failing to remember it must not turn the answer into a no
            return True
        return True
