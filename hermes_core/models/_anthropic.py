"""Anthropic Messages: ``POST {base_url}/v1/messages``, streaming or not, with ``tool_use`` blocks.

The conversation stays in the Chat Completions shape everywhere else; it is translated here: system messages
become the ``system`` field, assistant tool calls ``tool_use`` blocks, tool results ``tool_result`` blocks in a
user turn, and neighbouring messages of one role are merged (the API wants the roles to alternate).

Extended thinking: ``thinking`` and ``redacted_thinking`` blocks come back on the assistant message
(``thinking_blocks``) and are sent back first in that turn, unchanged, signatures and all; the API refuses a
tool-use turn without them. The stop reasons ``refusal``, ``max_tokens`` and ``model_context_window_exceeded``
end a turn as ``refusal`` and ``length``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._client import HttpModelClient, content_text
from ._http import Attempt, classify_error, error_info, iter_sse
from ._openai import new_call_id
from ._types import CancelToken, ModelError, ModelReply, TextCallback, ToolCall, Usage

if TYPE_CHECKING:
    import httpx

    from ._config import ModelSpec

__all__ = ["API_VERSION", "AnthropicClient", "to_anthropic_messages"]

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "refusal",
}
_THINKING = ("thinking", "redacted_thinking")
_THINKING_FIELDS = {"thinking": ("type", "thinking", "signature"), "redacted_thinking": ("type", "data")}


def _thinking_blocks(value: Any) -> list[dict[str, Any]]:
    """The thinking blocks kept on an assistant message, with exactly the fields the API defines."""
    out = []
    for block in value if isinstance(value, list) else ():
        if isinstance(block, dict) and block.get("type") in _THINKING:
            fields = _THINKING_FIELDS[block["type"]]
            out.append({key: block[key] for key in fields if key in block})
    return out


def _tool_input(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments) if isinstance(arguments, str) and arguments.strip() else {}
    except ValueError:
        return {}  # the model saw its own mistake in the tool result; the API only takes objects here
    return value if isinstance(value, dict) else {}


def to_anthropic_messages(messages: Sequence[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """``(system, messages)`` in the Messages API's shape, from Chat Completions messages."""
    system: list[str] = []
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            merged = out[-1]["content"]
            thinking = [b for b in blocks if b.get("type") in _THINKING]
            if (
                thinking
            ):  # thinking opens an assistant turn: keep it ahead of what the merged turn already has
                first = next((i for i, b in enumerate(merged) if b.get("type") not in _THINKING), len(merged))
                merged[first:first] = thinking
            merged.extend(b for b in blocks if b.get("type") not in _THINKING)
        else:
            out.append({"role": role, "content": blocks})

    for msg in messages:
        role = msg.get("role")
        if role == "system":
            text = content_text(msg.get("content"))
            if text:
                system.append(text)
        elif role == "tool":
            add(
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": str(msg.get("tool_call_id", "")),
                        "content": content_text(msg.get("content")) or "(empty)",
                    }
                ],
            )
        elif role == "assistant":
            blocks: list[dict[str, Any]] = _thinking_blocks(msg.get("thinking_blocks"))
            text = content_text(msg.get("content"))
            if text.strip():
                blocks.append({"type": "text", "text": text})
            for call in msg.get("tool_calls") or ():
                fn = call.get("function") or {}
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": str(call.get("id") or new_call_id()),
                        "name": str(fn.get("name", "")),
                        "input": _tool_input(fn.get("arguments")),
                    }
                )
            add("assistant", blocks)
        else:
            text = content_text(msg.get("content"))
            add("user", [{"type": "text", "text": text if text.strip() else "(empty)"}])
    if out and out[0]["role"] != "user":
        out.insert(0, {"role": "user", "content": [{"type": "text", "text": "(conversation start)"}]})
    return "\n\n".join(system), out


class AnthropicClient(HttpModelClient):
    """A ``ModelClient`` for the Anthropic Messages API (or a server that speaks it)."""

    tool_format = "anthropic"

    def __init__(self, spec: ModelSpec, http: httpx.Client) -> None:
        super().__init__(spec, http)
        self.max_output_tokens = spec.max_tokens or DEFAULT_MAX_TOKENS
        base = spec.base_url
        self.url = base + ("/messages" if base.endswith("/v1") else "/v1/messages")

    def _headers(self) -> dict[str, str]:
        headers = {
            "anthropic-version": API_VERSION,
            "Accept": "text/event-stream" if self.spec.stream else "application/json",
        }
        if self.spec.api_key:
            headers["x-api-key"] = self.spec.api_key
        headers.update(self.spec.headers)
        return headers

    def request_body(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
    ) -> dict[str, Any]:
        spec = self.spec
        system, wire = to_anthropic_messages(messages)
        body: dict[str, Any] = {"model": spec.model, "max_tokens": self.max_output_tokens, "messages": wire}
        if system:
            body["system"] = system
        return self.with_options(body, tools)

    def _read_json(
        self, response: httpx.Response, on_text: TextCallback | None, attempt: Attempt
    ) -> ModelReply:
        try:
            data = response.json()
        except ValueError:
            raise self._protocol_error("the answer is not JSON") from None
        if isinstance(data, dict) and data.get("type") == "error":
            raise classify_error(self.spec, f"model {self.name!r}", None, error_info(data))
        if not isinstance(data, dict) or not isinstance(data.get("content"), list):
            raise self._protocol_error("the answer has no content")
        texts: list[str] = []
        calls: list[ToolCall] = []
        thinking: list[dict[str, Any]] = []
        for block in data["content"]:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                texts.append(str(block.get("text", "")))
            elif kind in _THINKING:
                thinking.extend(_thinking_blocks([block]))
            elif kind == "tool_use":
                raw = block.get("input")
                calls.append(
                    ToolCall(
                        id=str(block.get("id") or new_call_id()),
                        name=str(block.get("name", "")),
                        arguments=raw if isinstance(raw, str) else json.dumps(raw if raw is not None else {}),
                    )
                )
        text = "".join(texts)
        if text and on_text is not None:
            attempt.emitted = True
            on_text(text)
        stop = str(data.get("stop_reason") or ("tool_use" if calls else "end_turn"))
        return ModelReply(
            text=text,
            tool_calls=calls,
            stop_reason=_STOP.get(stop, stop),
            usage=_usage(data.get("usage")),
            model=str(data.get("model") or self.model),
            thinking=thinking,
        )

    def _read_stream(
        self, response: httpx.Response, attempt: Attempt, on_text: TextCallback | None, cancel: CancelToken
    ) -> ModelReply:
        texts: list[str] = []
        blocks: dict[int, dict[str, Any]] = {}
        stop: str | None = None
        usage = Usage()
        model = self.model
        done = False
        for _event, data in iter_sse(response.iter_lines()):
            if cancel.cancelled:
                return ModelReply(text="".join(texts), stop_reason="cancelled", usage=usage, model=model)
            if done:
                continue  # read on to the end of the body, so the connection goes back to the pool
            try:
                event = json.loads(data)
            except ValueError:
                raise self._protocol_error(f"unreadable stream event {data[:100]!r}") from None
            if not isinstance(event, dict):
                continue
            kind = event.get("type")
            if kind == "message_start":
                message = event.get("message") or {}
                model = str(message.get("model") or model)
                usage = _usage(message.get("usage"))
            elif kind == "content_block_start":
                block = dict(event.get("content_block") or {})
                block["_json"] = ""
                blocks[int(event.get("index", len(blocks)))] = block
            elif kind == "content_block_delta":
                block = blocks.setdefault(int(event.get("index", 0)), {"type": "text", "_json": ""})
                delta = event.get("delta") or {}
                dtype = delta.get("type")
                if dtype == "text_delta":
                    piece = str(delta.get("text", ""))
                    texts.append(piece)
                    if piece and on_text is not None:
                        attempt.emitted = True
                        on_text(piece)
                elif dtype == "input_json_delta":
                    block["_json"] += str(delta.get("partial_json", ""))
                elif dtype == "thinking_delta":
                    block["thinking"] = str(block.get("thinking") or "") + str(delta.get("thinking", ""))
                elif dtype == "signature_delta":
                    block["signature"] = str(delta.get("signature", ""))
            elif kind == "message_delta":
                stop = str((event.get("delta") or {}).get("stop_reason") or stop or "end_turn")
                later = _usage(
                    event.get("usage")
                )  # cumulative counts; input ones only when the server resends
                usage.output_tokens = later.output_tokens or usage.output_tokens
                usage.input_tokens = later.input_tokens or usage.input_tokens
                usage.cache_read_tokens = later.cache_read_tokens or usage.cache_read_tokens
                usage.cache_write_tokens = later.cache_write_tokens or usage.cache_write_tokens
            elif kind == "error":
                raise classify_error(
                    self.spec, f"model {self.name!r}: the stream ended with an error", None, error_info(event)
                )
            elif kind == "message_stop":
                done = True
        if cancel.cancelled:
            return ModelReply(text="".join(texts), stop_reason="cancelled", usage=usage, model=model)
        if not done and stop is None:
            raise ModelError(
                f"model {self.name!r}: the stream ended before the answer was complete",
                kind="protocol",
                retryable=True,
            )
        calls = []
        thinking: list[dict[str, Any]] = []
        for _, block in sorted(blocks.items()):
            if block.get("type") in _THINKING:
                thinking.extend(_thinking_blocks([block]))
                continue
            if block.get("type") != "tool_use":
                continue
            arguments = block["_json"]
            if not arguments.strip():
                initial = block.get("input")
                arguments = json.dumps(initial) if isinstance(initial, dict) else "{}"
            calls.append(
                ToolCall(
                    id=str(block.get("id") or new_call_id()),
                    name=str(block.get("name", "")),
                    arguments=arguments,
                )
            )
        stop = stop or "end_turn"
        return ModelReply(
            text="".join(texts),
            tool_calls=calls,
            stop_reason=_STOP.get(stop, stop),
            usage=usage,
            model=model,
            thinking=thinking,
        )


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()

    def count(key: str) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    return Usage(
        input_tokens=count("input_tokens"),
        output_tokens=count("output_tokens"),
        cache_read_tokens=count("cache_read_input_tokens"),
        cache_write_tokens=count("cache_creation_input_tokens"),
    )
