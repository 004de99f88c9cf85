"""The human behind an MCP client, for ``hermes mcp serve``: approvals and questions asked of the client.

Each ``tools/call`` gets a ``ClientCall``, passed to the pipeline as the call's own approver and ``ask_user``
(``system.call_outcome(..., approver=call, ask_user=call.ask_user)``), so whatever the call needs a human for (a
dangerous command, a write outside the workspace, a hook's ``RequireApproval``, ``clarify``) is put to the client
that made it, and to no one else. An approval is a form elicitation with one ``decision`` field (``once`` /
``session`` / ``deny``); a question is a form with one ``answer`` field (an enum when it has choices). Anything
else (a client that did not declare elicitation, a declined or cancelled form, a timeout, a broken answer) is a
denial.

Two protocol eras, one behaviour:

- up to 2025-11-25 the question is an ``elicitation/create`` request sent to the client in the middle of the call
  (the pipeline's thread waits for the answer while the server's loop carries it);
- from 2026-07-28 a server cannot send requests of its own: the call ends with an ``InputRequiredResult`` that
  carries the questions, and the client runs the call again with the answers. What the server must remember
  between the rounds (the answers given so far, the questions asked) stays on the server (``Rounds``): the
  ``request_state`` the client carries is only a random, single-use handle bound to the client's session and to
  the exact call (tool and arguments). A forged, replayed, foreign or stale handle is refused
  (``StateRefused``); answers to questions that were never asked are ignored.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from .._aio.cancel import current_token
from .._log import get_logger

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from ..security import Answer, ApprovalRequest

__all__ = ["APPROVAL_SCHEMA", "ClientCall", "Rounds", "StateRefused", "question_schema"]

log = get_logger("hermes.mcp.server")

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {
            "type": "string",
            "title": "Allow this?",
            "description": "once: this call only; session: the same action for the rest of this session; deny",
            "enum": ["once", "session", "deny"],
            "default": "deny",
        }
    },
    "required": ["decision"],
}

_ANSWERS = ("once", "session", "deny")
ROUND_TTL = 600.0
"""Seconds a client has to come back with the answers of one round (2026-07-28)."""
MAX_ROUNDS = 64
"""Unanswered rounds kept per session; the oldest is forgotten first."""


def question_schema(choices: Sequence[str] | None) -> dict[str, Any]:
    """The form of a free question (``clarify``): one ``answer`` field, an enum when there are choices."""
    answer: dict[str, Any] = {"type": "string", "title": "Your answer"}
    if choices:
        answer["enum"] = [str(c) for c in choices]
    return {"type": "object", "properties": {"answer": answer}, "required": ["answer"]}


class StateRefused(Exception):
    """A ``request_state`` this server did not issue for this session and call, or one already used."""


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def call_fingerprint(name: str, arguments: Any) -> str:
    """What a round is bound to: the tool and its exact arguments."""
    return _digest(name, json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str))


@dataclass(slots=True)
class _Round:
    session_id: str
    fingerprint: str
    answers: dict[str, Any]
    asked: frozenset[str]
    expires: float = field(default_factory=lambda: time.monotonic() + ROUND_TTL)


class Rounds:
    """The server side of 2026-07-28 multi-round calls: one record per handle, used once, per session.

    A handle is ``<id>.<mac>``: a random id and an HMAC of it under a key made when the server starts, so a
    handle can be told apart from garbage without a lookup; the record behind it names the session and the call.
    """

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)
        self._open: dict[str, OrderedDict[str, _Round]] = {}  # session -> handle id -> round
        self._lock = threading.Lock()

    def _mac(self, ident: str) -> str:
        return hmac.new(self._key, ident.encode(), hashlib.sha256).hexdigest()[:32]

    def issue(self, session_id: str, fingerprint: str, answers: dict[str, Any], asked: frozenset[str]) -> str:
        ident = secrets.token_urlsafe(18)
        with self._lock:
            rounds = self._open.setdefault(session_id, OrderedDict())
            now = time.monotonic()
            for stale in [k for k, r in rounds.items() if r.expires < now]:
                del rounds[stale]
            while len(rounds) >= MAX_ROUNDS:
                rounds.popitem(last=False)
            rounds[ident] = _Round(session_id, fingerprint, dict(answers), asked)
        return f"{ident}.{self._mac(ident)}"

    def redeem(self, handle: str, session_id: str, fingerprint: str) -> tuple[dict[str, Any], frozenset[str]]:
        """The answers and questions of the round behind ``handle``, which is used up; ``StateRefused`` else."""
        ident, _, mac = handle.partition(".")
        if not ident or not hmac.compare_digest(mac.encode(), self._mac(ident).encode()):
            raise StateRefused("this request_state was not issued by this server")
        with self._lock:
            rounds = self._open.get(session_id)
            found = rounds.pop(ident, None) if rounds is not None else None
            if found is None:
                raise StateRefused(
                    "this request_state belongs to another session, was already used or expired"
                )
            if not self._open.get(session_id):
                self._open.pop(session_id, None)
        if found.fingerprint != fingerprint:
            raise StateRefused("this request_state was issued for another call (tool or arguments differ)")
        if found.expires < time.monotonic():
            raise StateRefused("this request_state expired; run the call again")
        return found.answers, found.asked

    def owner(self, handle: str) -> str | None:
        """The session a well-formed, live handle was issued to (for a client that kept no session cookie)."""
        ident, _, mac = handle.partition(".")
        if not ident or not hmac.compare_digest(mac.encode(), self._mac(ident).encode()):
            return None
        with self._lock:
            for session_id, rounds in self._open.items():
                if ident in rounds:
                    return session_id
        return None

    def has(self, session_id: str) -> bool:
        """Whether a session has rounds waiting for answers."""
        with self._lock:
            return bool(self._open.get(session_id))

    def forget(self, session_id: str) -> None:
        """Drop every round of a session that ended."""
        with self._lock:
            self._open.pop(session_id, None)

    def __len__(self) -> int:
        with self._lock:
            return sum(len(r) for r in self._open.values())


def _answer_of(result: Any, sessions: bool) -> Answer:
    """An ``ElicitResult`` (or its dict) as an approval answer; anything unexpected is a denial."""
    action, content = _action_content(result)
    if action != "accept" or not isinstance(content, dict):
        return "deny"
    decision = content.get("decision")
    if decision not in _ANSWERS:
        return "deny"
    if decision == "session" and not sessions:
        return "once"  # no session to remember it for (a client that keeps none)
    return cast("Answer", decision)


def _text_of(result: Any) -> str | None:
    """An ``ElicitResult`` (or its dict) as the answer to a question, or None when the user gave none."""
    action, content = _action_content(result)
    if action != "accept" or not isinstance(content, dict):
        return None
    answer = content.get("answer")
    return str(answer) if isinstance(answer, (str, int, float)) and not isinstance(answer, bool) else None


def _action_content(result: Any) -> tuple[Any, Any]:
    if isinstance(result, dict):
        return result.get("action"), result.get("content")
    return getattr(result, "action", None), getattr(result, "content", None)


class ClientCall:
    """One ``tools/call`` being served: the client to ask, and the answers it already gave for this call.

    It is the call's approver (``approve``) and its ``ask_user``; ``pending`` collects the questions of a
    2026-07-28 round, ``notes`` why something was denied without asking.
    """

    def __init__(
        self,
        ctx: ServerRequestContext[Any, Any],
        loop: asyncio.AbstractEventLoop,
        session_id: str,
        *,
        answers: dict[str, Any] | None = None,
        asked: frozenset[str] = frozenset(),
        input_responses: dict[str, Any] | None = None,
        stateful: bool = True,
        timeout: float = 300.0,
    ) -> None:
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        self.ctx = ctx
        self.loop = loop
        self.session_id = session_id
        self.stateful = stateful
        self.timeout = timeout
        self.modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        caps = ctx.session.client_capabilities
        elicitation = caps.elicitation if caps is not None else None
        # a bare `elicitation: {}` (before modes existed) means form support; url-only does not
        self.can_elicit = elicitation is not None and (
            elicitation.form is not None or elicitation.url is None
        )
        self.answers: dict[str, Any] = dict(answers or {})
        for key, response in (input_responses or {}).items():
            if key not in asked:  # an answer to a question this server never asked: ignored
                continue
            if key.startswith("hermes-approval-"):
                self.answers[key] = _answer_of(response, stateful)
            elif key.startswith("hermes-question-"):
                self.answers[key] = _text_of(response)
        self.pending: dict[str, Any] = {}  # input requests for an InputRequiredResult (2026-07-28)
        self.notes: list[str] = []  # why requests were denied without asking
        self._lock = threading.Lock()

    def _note(self, note: str) -> None:
        with self._lock:
            if note not in self.notes:
                self.notes.append(note)

    # -- the approver ----------------------------------------------------------------------------------

    def approve(self, request: ApprovalRequest) -> Answer:
        """The client's answer to ``request``; "deny" when it cannot be asked or does not say yes."""
        if not self.can_elicit:
            self._note(
                "the MCP client cannot ask its user (it did not declare elicitation support), so it was denied"
            )
            return "deny"
        message = (
            f"hermes wants to run {request.tool_name or 'a tool'}: {request.reason}\n\n"
            f"{request.kind}: {request.subject}"
        )
        key = "hermes-approval-" + _digest(request.kind, request.subject)
        if key in self.answers:
            return cast("Answer", self.answers[key])
        result = self._elicit(key, message, APPROVAL_SCHEMA)
        if result is None:
            return "deny"
        answer = _answer_of(result, self.stateful)
        self.answers[key] = answer
        return answer

    # -- ask_user ----------------------------------------------------------------------------------------

    def ask_user(self, question: str, choices: Sequence[str] | None = None) -> str:
        """Put a question to the client's user; raises ``ToolError`` when there is nobody to answer it."""
        from ..errors import ToolError

        if not self.can_elicit:
            raise ToolError(
                "the MCP client cannot ask its user (it did not declare elicitation support)", retryable=False
            )
        key = "hermes-question-" + _digest(question, json.dumps(list(choices or ())))
        if key in self.answers:
            answer = self.answers[key]
        else:
            result = self._elicit(key, question, question_schema(choices))
            if key in self.pending:  # 2026-07-28: the client answers in its next round
                raise ToolError("waiting for the user's answer", kind="input_required")
            answer = self.answers[key] = _text_of(result) if result is not None else None
        if answer is None:
            raise ToolError("the user did not answer the question", retryable=False)
        return str(answer)

    # -- asking ------------------------------------------------------------------------------------------

    def _elicit(self, key: str, message: str, schema: dict[str, Any]) -> Any:
        """The client's ``ElicitResult``, or None (not answered: a 2026-07-28 round, a timeout, a failure)."""
        if self.modern:
            from mcp.types import ElicitRequest, ElicitRequestFormParams

            with self._lock:
                self.pending[key] = ElicitRequest(
                    params=ElicitRequestFormParams(message=message, requested_schema=schema)
                )
            return None
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:  # cannot wait for the client on the loop that carries its answer
            log.error("a question was asked on the MCP server's own loop; it goes unanswered")
            return None
        coro = self.ctx.session.elicit_form(message, schema, related_request_id=self.ctx.request_id)
        try:
            future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        except RuntimeError:  # the server is shutting down
            coro.close()
            return None
        token = current_token()  # a cancelled call stops waiting for its answer (the question is withdrawn)
        forget = token.on_cancel(future.cancel) if token is not None else None
        try:
            return future.result(self.timeout)
        except cf.TimeoutError:
            future.cancel()
            self._note(f"nobody answered within {self.timeout:g} s, so it was denied")
        except cf.CancelledError:
            self._note("the client went away before it answered")
        except Exception as err:
            log.warning("elicitation failed (%s: %s); taking it as a no", type(err).__name__, err)
        finally:
            if forget is not None:
                forget()
        return None

    def asked(self) -> frozenset[str]:
        """The keys of this round's questions (what the client's next answers may be for)."""
        with self._lock:
            return frozenset(self.pending)
