"""What every model client speaks: tool calls, replies, usage, errors, cancellation and the client protocol.

Conversations are lists of OpenAI Chat Completions messages (``{"role": "user", "content": "..."}``, assistant
messages with ``tool_calls``, ``{"role": "tool", "tool_call_id": ..., "content": ...}``); clients of other
providers translate them on the wire.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "CancelToken",
    "ModelClient",
    "ModelError",
    "ModelReply",
    "RetryCallback",
    "TextCallback",
    "ToolCall",
    "Usage",
]

TextCallback = Callable[[str], None]
RetryCallback = Callable[[int, float, str], None]  # (attempt, delay in seconds, reason)


@dataclass(slots=True)
class ToolCall:
    """One tool call the model asked for; ``arguments`` is the JSON text exactly as the model produced it."""

    id: str
    name: str
    arguments: str

    def as_message_part(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(slots=True)
class Usage:
    """Tokens the provider reports (0 when it does not)."""

    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens

    def as_dict(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}


@dataclass(slots=True)
class ModelReply:
    """One assistant turn: its text, the tool calls it asked for, and why it stopped.

    ``stop_reason`` is ``stop`` (finished), ``tool_calls``, ``length`` (hit the output limit), ``cancelled``
    (the caller cancelled mid-stream: ``text`` is what arrived so far) or the provider's own word.
    """

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    stop_reason: str = "stop"
    usage: Usage = field(default_factory=Usage)
    model: str = ""

    def message(self) -> dict[str, Any]:
        """The reply as an assistant message for the conversation."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            msg["tool_calls"] = [c.as_message_part() for c in self.tool_calls]
        elif not self.text:
            msg["content"] = ""
        return msg


class ModelError(Exception):
    """A model request failed for good (after any retries).

    ``kind``: ``auth``, ``rate_limit``, ``server``, ``timeout``, ``connection``, ``bad_request``,
    ``context_length`` (the conversation is too long for the model), ``protocol`` (an unreadable answer) or
    ``cancelled``. ``retry_after`` is the wait the server asked for, in seconds, when it said.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


class CancelToken:
    """A thread-safe cancellation flag; cancelling a token cancels the tokens made from it with ``child()``."""

    __slots__ = ("__weakref__", "_children", "_event", "_lock")

    def __init__(self) -> None:
        self._event = threading.Event()
        self._children: weakref.WeakSet[CancelToken] = weakref.WeakSet()  # a finished child is not kept alive
        self._lock = threading.Lock()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        with self._lock:
            self._event.set()
            children = list(self._children)
        for child in children:
            child.cancel()

    def child(self) -> CancelToken:
        """A token cancelled with this one (but cancelling it leaves this one alone)."""
        token = CancelToken()
        with self._lock:
            self._children.add(token)
            if self._event.is_set():
                token._event.set()
        return token

    def wait(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds; True as soon as the token is cancelled."""
        return self._event.wait(timeout)


class ModelClient(Protocol):
    """A chat model: one ``complete()`` per assistant turn.

    ``tool_format`` names the definitions format it takes (``ToolSystem.definitions(format=...)``).
    ``context_window`` and ``max_output_tokens`` (tokens, None when unknown) size the agent's context budget.
    """

    name: str
    model: str
    tool_format: str
    context_window: int | None
    max_output_tokens: int | None

    def complete(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] = (),
        *,
        on_text: TextCallback | None = None,
        on_retry: RetryCallback | None = None,
        cancel: CancelToken | None = None,
    ) -> ModelReply: ...
