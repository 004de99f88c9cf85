"""Approvals for ``hermes mcp serve``: asked of the connected MCP client by elicitation, else denied.

The pipeline asks its approver (an ``Approver``: ``approve(request) -> "once" | "session" | "deny"``) whenever a
call needs a human: a dangerous command, a write outside the workspace, a hook's ``RequireApproval``, a tool
listed in ``[approvals] tools``. ``ElicitingApprover`` finds the MCP call being served (a context variable set
around the pipeline run) and asks that call's client with a form elicitation: a single ``decision`` field,
``once`` / ``session`` / ``deny``. Anything else (no call, a client that did not declare elicitation, a declined
or cancelled form, a timeout, a broken answer) is a denial.

Two protocol eras, one behaviour:

- up to 2025-11-25 the question is an ``elicitation/create`` request sent to the client in the middle of the call
  (the pipeline's thread waits for the answer while the server's loop carries it);
- from 2026-07-28 a server cannot send requests of its own: the call ends with an ``InputRequiredResult`` that
  carries the question, and the client retries the call with the answer. The retry runs the call from the start;
  the answer, bound to the exact subject (command, path or call), lets the same approval pass this time. Answers
  from earlier rounds travel in ``request_state``; a client can only echo its own answers there, so nothing is
  gained by forging it that answering ``once`` would not give.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import concurrent.futures as cf
import hashlib
import json
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from ..security import Answer, ApprovalRequest

__all__ = ["APPROVAL_SCHEMA", "CURRENT_CALL", "ClientCall", "ElicitingApprover", "serving"]

log = logging.getLogger("hermes.mcp.server")

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

CURRENT_CALL: ContextVar[ClientCall | None] = ContextVar("hermes_mcp_call", default=None)
"""The MCP call the pipeline is running right now (set by the server around ``system.call_outcome``)."""

_ANSWERS = ("once", "session", "deny")

_in_flight: dict[str, list[ClientCall]] = {}  # pipeline session id -> the calls being served for it
_in_flight_lock = threading.Lock()


@contextmanager
def serving(call: ClientCall) -> Iterator[None]:
    """Mark ``call`` as the one being served on this thread (and in flight for its session) for the block."""
    token = CURRENT_CALL.set(call)
    with _in_flight_lock:
        _in_flight.setdefault(call.session_id, []).append(call)
    try:
        yield
    finally:
        CURRENT_CALL.reset(token)
        with _in_flight_lock:
            calls = _in_flight.get(call.session_id, [])
            if call in calls:
                calls.remove(call)
            if not calls:
                _in_flight.pop(call.session_id, None)


def _only_call_of(session_id: str) -> ClientCall | None:
    """The call in flight for a session when the context variable did not travel (a tool's own thread, as
    ``execute_code`` uses for the calls its script makes); None when there are none or several to choose from."""
    with _in_flight_lock:
        calls = _in_flight.get(session_id, [])
        return calls[0] if len(calls) == 1 else None


def _key(request: ApprovalRequest) -> str:
    digest = hashlib.sha256(f"{request.kind}\0{request.subject}".encode()).hexdigest()[:24]
    return f"hermes-approval-{digest}"


def _answer_of(result: Any, sessions: bool) -> Answer:
    """An ``ElicitResult`` (or its dict) as an approval answer; anything unexpected is a denial."""
    if isinstance(result, dict):
        action, content = result.get("action"), result.get("content")
    else:
        action, content = getattr(result, "action", None), getattr(result, "content", None)
    if action != "accept" or not isinstance(content, dict):
        return "deny"
    decision = content.get("decision")
    if decision not in _ANSWERS:
        return "deny"
    if decision == "session" and not sessions:
        return "once"  # no session to remember it for (a stateless connection)
    return cast("Answer", decision)


class ClientCall:
    """One ``tools/call`` being served: the client to ask, and the answers it already gave for this call."""

    def __init__(
        self,
        ctx: ServerRequestContext[Any, Any],
        loop: asyncio.AbstractEventLoop,
        session_id: str,
        *,
        input_responses: dict[str, Any] | None = None,
        request_state: str | None = None,
        stateful: bool = True,
    ) -> None:
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        self.ctx = ctx
        self.loop = loop
        self.session_id = session_id
        self.stateful = stateful
        self.modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        caps = ctx.session.client_capabilities
        elicitation = caps.elicitation if caps is not None else None
        # a bare `elicitation: {}` (before modes existed) means form support; url-only does not
        self.can_elicit = elicitation is not None and (
            elicitation.form is not None or elicitation.url is None
        )
        self.answers: dict[str, Answer] = _decode_state(request_state)
        for key, response in (input_responses or {}).items():
            if key.startswith("hermes-approval-"):
                self.answers[key] = _answer_of(response, stateful)
        self.pending: dict[str, Any] = {}  # input requests for an InputRequiredResult (2026-07-28)
        self.notes: list[str] = []  # why requests were denied without asking

    def ask(self, request: ApprovalRequest, timeout: float) -> Answer:
        """The client's answer to ``request``; "deny" when it cannot be asked or does not say yes."""
        if not self.can_elicit:
            note = "the MCP client cannot ask its user (it did not declare elicitation support), so it was denied"
            if note not in self.notes:
                self.notes.append(note)
            return "deny"
        message = (
            f"hermes wants to run {request.tool_name or 'a tool'}: {request.reason}\n\n"
            f"{request.kind}: {request.subject}"
        )
        key = _key(request)
        if key in self.answers:
            return self.answers[key]
        if self.modern:
            from mcp.types import ElicitRequest, ElicitRequestFormParams

            self.pending[key] = ElicitRequest(
                params=ElicitRequestFormParams(message=message, requested_schema=APPROVAL_SCHEMA)
            )
            return "deny"
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:  # cannot wait for the client on the loop that carries its answer
            log.error("approval asked on the MCP server's own loop; denying")
            return "deny"
        coro = self.ctx.session.elicit_form(message, APPROVAL_SCHEMA, related_request_id=self.ctx.request_id)
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            result = future.result(timeout)
        except cf.TimeoutError:
            future.cancel()
            self.notes.append(f"nobody answered the approval request within {timeout:g} s, so it was denied")
            return "deny"
        except Exception as err:
            log.warning("approval elicitation failed (%s: %s); denying", type(err).__name__, err)
            return "deny"
        answer = _answer_of(result, self.stateful)
        self.answers[key] = answer
        return answer

    def state(self) -> str:
        """The ``request_state`` to send with an ``InputRequiredResult``: the answers given so far."""
        raw = json.dumps({"answers": self.answers}, sort_keys=True).encode()
        return base64.urlsafe_b64encode(raw).decode("ascii")


def _decode_state(state: str | None) -> dict[str, Answer]:
    if not state:
        return {}
    try:
        data = json.loads(base64.urlsafe_b64decode(state.encode("ascii")))
    except (binascii.Error, ValueError, UnicodeEncodeError):
        return {}
    answers = data.get("answers") if isinstance(data, dict) else None
    if not isinstance(answers, dict):
        return {}
    return {
        str(k): cast("Answer", v)
        for k, v in answers.items()
        if str(k).startswith("hermes-approval-") and v in _ANSWERS
    }


class ElicitingApprover:
    """The approver of a system served over MCP: asks the client of the call being served (see the module)."""

    def __init__(self, timeout: float = 300.0) -> None:
        self.timeout = timeout

    def approve(self, request: ApprovalRequest) -> Answer:
        call = CURRENT_CALL.get() or _only_call_of(request.session_id)
        if call is None:  # not inside an MCP call (a scheduled job), or not knowing which one: nobody to ask
            return "deny"
        return call.ask(request, self.timeout)
