"""OpenAI-compatible Chat Completions: api.openai.com and local servers (llama.cpp, vLLM, Ollama, LM Studio).

Streaming (server-sent events) or one JSON answer; tool calls, several per turn, arrive in pieces keyed by
``index`` and are put back together here. Arguments are kept as the text the model wrote, even when it is not
valid JSON: the tool pipeline repairs what it can and tells the model what it cannot.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._client import HttpModelClient, content_text
from ._http import Attempt, iter_sse
from ._types import CancelToken, ModelError, ModelReply, TextCallback, ToolCall, Usage

if TYPE_CHECKING:
    import httpx

    from ._config import ModelSpec

__all__ = ["OpenAIChatClient", "wire_messages"]

_FINISH = {"stop": "stop", "tool_calls": "tool_calls", "function_call": "tool_calls", "length": "length"}


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:16]


def wire_messages(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with only the fields Chat Completions defines (hosts and the loop may keep extras)."""
    out: list[dict[str, Any]] = []
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
            out.append(wire)
        else:
            content = msg.get("content")
            out.append(
                {"role": role, "content": content if isinstance(content, list) else content_text(content)}
            )
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


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    return Usage(int(raw.get("prompt_tokens") or 0), int(raw.get("completion_tokens") or 0))


class OpenAIChatClient(HttpModelClient):
    """A ``ModelClient`` for ``POST {base_url}/chat/completions``."""

    tool_format = "openai"

    def __init__(self, spec: ModelSpec, http: httpx.Client) -> None:
        super().__init__(spec, http)
        self.url = spec.base_url + "/chat/completions"

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
        body: dict[str, Any] = {"model": spec.model, "messages": wire_messages(messages)}
        if spec.max_tokens is not None:
            body["max_tokens"] = spec.max_tokens
        return self.with_options(body, tools)

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
                raise self._protocol_error(f"error in the answer: {data['error']}")
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
        finish = choices[0].get("finish_reason") or ("tool_calls" if calls else "stop")
        return ModelReply(
            text=text,
            tool_calls=calls,
            stop_reason=_FINISH.get(finish, finish),
            usage=_usage(data.get("usage")),
            model=str(data.get("model") or self.model),
        )

    def _read_stream(
        self, response: httpx.Response, attempt: Attempt, on_text: TextCallback | None, cancel: CancelToken
    ) -> ModelReply:
        parts: list[str] = []
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
                error = chunk["error"]
                message = error.get("message") if isinstance(error, dict) else str(error)
                raise ModelError(
                    f"model {self.name!r}: the stream ended with an error: {message}",
                    kind="server",
                    retryable=True,
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
                for raw in delta.get("tool_calls") or ():
                    self._merge_call(slots, raw)
                if choice.get("finish_reason"):
                    finish = choice["finish_reason"]
        if cancel.cancelled:
            return ModelReply(text="".join(parts), stop_reason="cancelled", usage=usage, model=model)
        calls = [
            ToolCall(id=s.id or new_call_id(), name=s.name, arguments=s.arguments)
            for _, s in sorted(slots.items())
        ]
        if finish is None:
            finish = "tool_calls" if calls else "stop"
        return ModelReply(
            text="".join(parts),
            tool_calls=calls,
            stop_reason=_FINISH.get(finish, finish),
            usage=usage,
            model=model,
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
