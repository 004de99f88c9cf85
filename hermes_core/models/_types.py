"""What every model client speaks: tool calls, replies, usage, errors, cancellation and the client protocol.

Conversations are lists of OpenAI Chat Completions messages (``{"role": "user", "content": "..."}``, assistant
messages with ``tool_calls``, ``{"role": "tool", "tool_call_id": ..., "content": ...}``); clients of other
providers translate them on the wire.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .._aio.cancel import CancelToken

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
    """Tokens the provider reports (0 when it does not).

    ``input_tokens`` and ``output_tokens`` as the provider counts them (Anthropic's input leaves out cached
    tokens, OpenAI's includes them); ``cache_read_tokens`` / ``cache_write_tokens`` the prompt-cache share;
    ``reasoning_tokens`` the part of the output spent thinking, when the provider says.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens
        self.reasoning_tokens += other.reasoning_tokens

    def __bool__(self) -> bool:
        return bool(self.input_tokens or self.output_tokens)

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "reasoning_tokens": self.reasoning_tokens,
        }


@dataclass(slots=True)
class ModelReply:
    """One assistant turn: its text, the tool calls it asked for, and why it stopped.

    ``stop_reason``: ``stop`` (finished), ``tool_calls``, ``length`` (the output limit or the context window
    cut it short), ``refusal`` (the model declined; ``refusal`` holds its explanation when the provider sends
    one apart), ``content_filter`` (the provider's filter stopped it), ``cancelled`` (the caller cancelled
    mid-stream: ``text`` is what arrived so far) or the provider's own word.

    What the model thought travels with the turn so it can be sent back unchanged: ``thinking`` holds Anthropic
    ``thinking`` / ``redacted_thinking`` blocks exactly as received (signatures included); ``reasoning`` the
    reasoning text and ``reasoning_details`` the structured reasoning an OpenAI-compatible server sent.
    """

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    stop_reason: str = "stop"
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    refusal: str = ""
    thinking: list[dict[str, Any]] = field(default_factory=list)
    reasoning: str = ""
    reasoning_details: list[Any] = field(default_factory=list)

    def message(self) -> dict[str, Any]:
        """The reply as an assistant message for the conversation (Chat Completions shape; the thinking and
        reasoning ride along as ``thinking_blocks``, ``reasoning_content`` and ``reasoning_details``)."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            msg["tool_calls"] = [c.as_message_part() for c in self.tool_calls]
        elif not self.text:
            msg["content"] = ""
        if self.refusal:
            msg["refusal"] = self.refusal
        if self.thinking:
            msg["thinking_blocks"] = [dict(block) for block in self.thinking]
        if self.reasoning:
            msg["reasoning_content"] = self.reasoning
        if self.reasoning_details:
            msg["reasoning_details"] = list(self.reasoning_details)
        return msg


class ModelError(Exception):
    """A model request failed for good (after any retries).

    ``kind``: ``auth``, ``rate_limit``, ``server``, ``timeout``, ``connection``, ``bad_request``,
    ``context_length`` (the conversation is too long for the model), ``protocol`` (an unreadable or incomplete
    answer) or ``cancelled``. ``retry_after`` is the wait the server asked for, in seconds, when it said.
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
