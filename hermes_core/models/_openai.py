"""OpenAI-compatible Chat Completions: api.openai.com and local servers (llama.cpp, vLLM, Ollama, LM Studio).

Streaming (server-sent events) or one JSON answer; tool calls, several per turn, arrive in pieces keyed by
``index`` and are put back together here. Arguments are kept as the text the model wrote, even when it is not
valid JSON: the tool pipeline repairs what it can and tells the model what it cannot.

A stream asks for its usage (``stream_options.include_usage``) unless ``stream_usage = false``; a server that
refuses the field is asked again without it (and not asked again). A refusal (``refusal``), the content filter
and the output limit are stop reasons of their own. Reasoning that compatible servers send
(``reasoning_content`` or ``reasoning``, OpenRouter's ``reasoning_details``) is kept on the assistant message and
sent back with the assistant turns of the current task (``keep_reasoning``), never with older ones.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._log import get_logger
from ._client import HttpModelClient, content_text
from ._http import Attempt, classify_error, error_info, iter_sse
from ._types import CancelToken, ModelError, ModelReply, RetryCallback, TextCallback, ToolCall, Usage

if TYPE_CHECKING:
    import httpx

    from ._config import ModelSpec

__all__ = ["OpenAIChatClient", "wire_messages"]

log = get_logger("hermes.models")

_FINISH = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:16]


def wire_messages(messages: Sequence[dict[str, Any]], *, reasoning: bool = True) -> list[dict[str, Any]]:
    """The messages with only the fields Chat Completions defines (hosts and the loop may keep extras).

    With ``reasoning``, the assistant turns after the last user message (the task's tool loop) carry back the
    reasoning their server sent with them; older turns never do (servers reject or ignore it there).
    """
    out: list[dict[str, Any]] = []
    thoughtful: list[
        tuple[dict[str, Any], dict[str, Any]]
    ] = []  # (wire, message) since the last user message
    for msg in messages:
        role = msg.get("role")
        if role == "tool":
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": str(msg.get("tool_call_id", "")),
                    "content": content_text(msg.get("content")),
                }
            )
        elif role == "assistant":
            wire: dict[str, Any] = {"role": "assistant", "content": msg.get("content")}
            if msg.get("tool_calls"):
                wire["tool_calls"] = msg["tool_calls"]
            elif wire["content"] is None:
                wire["content"] = ""
            if msg.get("refusal") and isinstance(msg["refusal"], str):
                wire["refusal"] = msg["refusal"]
            if reasoning and ("reasoning_content" in msg or "reasoning_details" in msg):
                thoughtful.append((wire, msg))
            out.append(wire)
        else:
            if role == "user":
                thoughtful.clear()
            content = msg.get("content")
            out.append(
                {"role": role, "content": content if isinstance(content, list) else content_text(content)}
            )
    for wire, msg in thoughtful:
        for key in ("reasoning_content", "reasoning_details"):
            if msg.get(key):
                wire[key] = msg[key]
    return out


class _CallSlot:
    __slots__ = ("arguments", "id", "name")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments = ""


def _arguments_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)  # some servers send an object instead of JSON text


def _count(raw: Any, *keys: str) -> int:
    for key in keys:
        if not isinstance(raw, dict):
            return 0
        raw = raw.get(key)
    return raw if isinstance(raw, int) and not isinstance(raw, bool) else 0


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    return Usage(
        input_tokens=_count(raw, "prompt_tokens"),
        output_tokens=_count(raw, "completion_tokens"),
        cache_read_tokens=_count(raw, "prompt_tokens_details", "cached_tokens"),
        reasoning_tokens=_count(raw, "completion_tokens_details", "reasoning_tokens"),
    )


def _reasoning_text(part: dict[str, Any]) -> str:
    """The reasoning text of a message or delta: ``reasoning_content`` (DeepSeek, llama.cpp, vLLM) or
    ``reasoning`` (OpenRouter, newer vLLM)."""
    value = part.get("reasoning_content")
    if not isinstance(value, str):
        value = part.get("reasoning")
    return value if isinstance(value, str) else ""


def _merge_details(into: list[dict[str, Any]], pieces: Any) -> None:
    """Put streamed ``reasoning_details`` back together: pieces with one ``index`` are one item, their text
    fields joined (``text``, ``summary``, ``data``), the others taken as they come."""
    if not isinstance(pieces, list):
        return
    for piece in pieces:
        if not isinstance(piece, dict):
            continue
        index = piece.get("index")
        item = next((d for d in into if index is not None and d.get("index") == index), None)
        if item is None:
            into.append(dict(piece))
            continue
        for key, value in piece.items():
            if key in ("text", "summary", "data") and isinstance(value, str):
                item[key] = str(item.get(key) or "") + value
            elif value is not None:
                item[key] = value


def _stop_reason(finish: str, refusal: str) -> str:
    if refusal:
        return "refusal"
    return _FINISH.get(finish, finish)


class OpenAIChatClient(HttpModelClient):
    """A ``ModelClient`` for ``POST {base_url}/chat/completions``."""

    tool_format = "openai"

    def __init__(self, spec: ModelSpec, http: httpx.Client) -> None:
        super().__init__(spec, http)
        self.url = spec.base_url + "/chat/completions"
        self._stream_usage = spec.stream_usage  # turned off for good when the server refuses stream_options

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream" if self.spec.stream else "application/json"}
        if self.spec.api_key:
            headers["Authorization"] = f"Bearer {self.spec.api_key}"
        headers.update(self.spec.headers)
        return headers

    def request_body(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
    ) -> dict[str, Any]:
        spec = self.spec
        body: dict[str, Any] = {
            "model": spec.model,
            "messages": wire_messages(messages, reasoning=spec.keep_reasoning),
        }
        if spec.max_tokens is not None:
            body["max_tokens"] = spec.max_tokens
        body = self.with_options(body, tools)
        if body.get("stream") and self._stream_usage and "stream_options" not in body:
            body["stream_options"] = {"include_usage": True}
        return body

    def complete(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] = (),
        *,
        on_text: TextCallback | None = None,
        on_retry: RetryCallback | None = None,
        cancel: CancelToken | None = None,
    ) -> ModelReply:
        try:
            return super().complete(messages, tools, on_text=on_text, on_retry=on_retry, cancel=cancel)
        except ModelError as err:
            if not (err.kind == "bad_request" and self._stream_usage and "stream_options" in err.message):
                raise
        log.info(
            "model %s: the server refuses stream_options; asking without it (no usage counts)", self.name
        )
        self._stream_usage = False
        return super().complete(messages, tools, on_text=on_text, on_retry=on_retry, cancel=cancel)

    def _read_json(
        self, response: httpx.Response, on_text: TextCallback | None, attempt: Attempt
    ) -> ModelReply:
        try:
            data = response.json()
        except ValueError:
            raise self._protocol_error("the answer is not JSON") from None
        choices = data.get("choices") if isinstance(data, dict) else None
        if not choices or not isinstance(choices[0], dict):
            if isinstance(data, dict) and data.get("error"):
                raise classify_error(self.spec, f"model {self.name!r}", None, error_info(data))
            raise self._protocol_error("the answer has no choices")
        message = choices[0].get("message") or {}
        text = content_text(message.get("content"))
        calls = []
        for raw in message.get("tool_calls") or ():
            fn = raw.get("function") or {}
            calls.append(
                ToolCall(
                    id=str(raw.get("id") or new_call_id()),
                    name=str(fn.get("name") or ""),
                    arguments=_arguments_text(fn.get("arguments")),
                )
            )
        if text and on_text is not None:
            attempt.emitted = True
            on_text(text)
        refusal = message.get("refusal") if isinstance(message.get("refusal"), str) else ""
        details = message.get("reasoning_details")
        finish = choices[0].get("finish_reason") or ("tool_calls" if calls else "stop")
        return ModelReply(
            text=text,
            tool_calls=calls,
            stop_reason=_stop_reason(finish, refusal or ""),
            usage=_usage(data.get("usage")),
            model=str(data.get("model") or self.model),
            refusal=refusal or "",
            reasoning=_reasoning_text(message),
            reasoning_details=list(details) if isinstance(details, list) else [],
        )

    def _read_stream(
        self, response: httpx.Response, attempt: Attempt, on_text: TextCallback | None, cancel: CancelToken
    ) -> ModelReply:
        parts: list[str] = []
        refusal: list[str] = []
        reasoning: list[str] = []
        details: list[dict[str, Any]] = []
        slots: dict[int, _CallSlot] = {}
        finish: str | None = None
        usage = Usage()
        model = self.model
        done = False
        for _event, data in iter_sse(response.iter_lines()):
            if cancel.cancelled:
                return ModelReply(text="".join(parts), stop_reason="cancelled", usage=usage, model=model)
            if done or data.strip() == "[DONE]":
                done = True  # read on to the end of the body, so the connection goes back to the pool
                continue
            try:
                chunk = json.loads(data)
            except ValueError:
                raise self._protocol_error(f"unreadable stream event {data[:100]!r}") from None
            if not isinstance(chunk, dict):
                continue
            if chunk.get("error"):
                raise classify_error(
                    self.spec, f"model {self.name!r}: the stream ended with an error", None, error_info(chunk)
                )
            model = str(chunk.get("model") or model)
            if chunk.get("usage"):
                usage = _usage(chunk["usage"])
            for choice in chunk.get("choices") or ():
                if not isinstance(choice, dict):
                    continue
                delta = choice.get("delta") or {}
                piece = delta.get("content")
                if piece:
                    parts.append(piece)
                    if on_text is not None:
                        attempt.emitted = True
                        on_text(piece)
                if len(delta) > 1 or piece is None:  # more than a piece of text: what else it carries
                    if isinstance(delta.get("refusal"), str):
                        refusal.append(delta["refusal"])
                    if "reasoning_content" in delta or "reasoning" in delta:
                        thought = _reasoning_text(delta)
                        if thought:
                            reasoning.append(thought)
                    if delta.get("reasoning_details"):
                        _merge_details(details, delta["reasoning_details"])
                    for raw in delta.get("tool_calls") or ():
                        self._merge_call(slots, raw)
                if choice.get("finish_reason"):
                    finish = choice["finish_reason"]
        if cancel.cancelled:
            return ModelReply(text="".join(parts), stop_reason="cancelled", usage=usage, model=model)
        if finish is None and not done:
            raise ModelError(
                f"model {self.name!r}: the stream ended before the answer was complete",
                kind="protocol",
                retryable=True,
            )
        calls = [
            ToolCall(id=s.id or new_call_id(), name=s.name, arguments=s.arguments)
            for _, s in sorted(slots.items())
        ]
        if finish is None:
            finish = "tool_calls" if calls else "stop"
        refused = "".join(refusal)
        return ModelReply(
            text="".join(parts),
            tool_calls=calls,
            stop_reason=_stop_reason(finish, refused),
            usage=usage,
            model=model,
            refusal=refused,
            reasoning="".join(reasoning),
            reasoning_details=details,
        )

    @staticmethod
    def _merge_call(slots: dict[int, _CallSlot], raw: Any) -> None:
        if not isinstance(raw, dict):
            return
        index = raw.get("index")
        if not isinstance(
            index, int
        ):  # servers that omit the index: a new id starts a call, else the last one
            call_id = raw.get("id")
            known = {s.id: i for i, s in slots.items() if s.id}
            if call_id and call_id in known:
                index = known[call_id]
            elif call_id or not slots:
                index = len(slots)
            else:
                index = max(slots)
        slot = slots.setdefault(index, _CallSlot())
        if raw.get("id"):
            slot.id = str(raw["id"])
        fn = raw.get("function") or {}
        name = fn.get("name")
        if name and name != slot.name:
            slot.name += name
        args = fn.get("arguments")
        if args is not None:
            slot.arguments += _arguments_text(args)
