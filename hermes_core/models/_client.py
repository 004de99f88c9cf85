"""What the two wire formats share: a ``ModelClient`` over one httpx client that POSTs a body and reads the answer
as a stream or as one JSON document. Subclasses say where (``url``), with which headers, what body, and how to
read each kind of answer."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._http import Attempt, post_json
from ._types import CancelToken, ModelError, ModelReply, RetryCallback, TextCallback

if TYPE_CHECKING:
    import httpx

    from ._config import ModelSpec

__all__ = ["HttpModelClient", "content_text"]


def content_text(content: Any) -> str:
    """The text of a message's ``content``: a string, content parts (their ``text``), or nothing."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


class HttpModelClient(ABC):
    """The request/response skeleton of a model client; see ``OpenAIChatClient`` and ``AnthropicClient``."""

    tool_format = "openai"
    url: str

    def __init__(self, spec: ModelSpec, http: httpx.Client) -> None:
        self.spec = spec
        self.name = spec.name
        self.model = spec.model
        self.context_window = spec.context_window
        self.max_output_tokens: int | None = spec.max_tokens
        self._http = http

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} model={self.model} url={self.url}>"

    @abstractmethod
    def _headers(self) -> dict[str, str]:
        """The request headers (authentication and ``Accept`` included)."""

    @abstractmethod
    def request_body(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
    ) -> dict[str, Any]:
        """The JSON body of one request; ``with_options`` adds the parts both formats share."""

    @abstractmethod
    def _read_stream(
        self, response: httpx.Response, attempt: Attempt, on_text: TextCallback | None, cancel: CancelToken
    ) -> ModelReply:
        """Read a streamed (server-sent events) answer, handing text to ``on_text`` as it arrives."""

    @abstractmethod
    def _read_json(
        self, response: httpx.Response, on_text: TextCallback | None, attempt: Attempt
    ) -> ModelReply:
        """Read an answer sent as one JSON document."""

    def with_options(self, body: dict[str, Any], tools: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """``body`` plus the tools, the configured temperature and extra params, and the stream flag."""
        spec = self.spec
        if tools:
            body["tools"] = list(tools)
        if spec.temperature is not None:
            body["temperature"] = spec.temperature
        body.update(spec.params)
        body["stream"] = spec.stream
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
        """One model turn: the reply to ``messages`` with ``tools`` offered (retried as ``post_json`` allows)."""
        token = cancel if cancel is not None else CancelToken()
        body = self.request_body(messages, tools)

        def handle(response: httpx.Response, attempt: Attempt) -> ModelReply:
            if self.spec.stream and "text/event-stream" in response.headers.get("content-type", ""):
                return self._read_stream(response, attempt, on_text, token)
            response.read()
            return self._read_json(response, on_text, attempt)

        return post_json(
            self._http, self.spec, self.url, body, self._headers(), handle, cancel=token, on_retry=on_retry
        )

    def _protocol_error(self, what: str) -> ModelError:
        return ModelError(f"model {self.name!r} ({self.spec.base_url}): {what}", kind="protocol")
