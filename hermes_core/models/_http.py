"""HTTP for model clients: one POST with retries (429/5xx/transport errors, ``retry-after`` honoured), server-sent
events, and readable errors.

A request is retried only while nothing of its answer has reached the caller: once streamed text was handed
out, a failure is final (a retry would repeat what the user already saw). A stream that fails before that (an
error event, a dropped connection, a stream that ends without its end marker) is retried like a failed request.
"""

from __future__ import annotations

import contextlib
import functools
import json
import random
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .._log import get_logger
from ._types import CancelToken, ModelError, ModelReply, RetryCallback

if TYPE_CHECKING:
    import httpx

    from ._config import ModelSpec

__all__ = [
    "RETRY_STATUSES",
    "Attempt",
    "ErrorInfo",
    "backoff_delay",
    "classify_error",
    "error_info",
    "is_context_overflow",
    "iter_sse",
    "post_json",
    "retry_after_seconds",
]

log = get_logger("hermes.models")

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 520, 522, 524, 529})
_BASE_DELAY = 0.5
_MAX_BACKOFF = 20.0


class Attempt:
    """What a response handler reports back: whether any of the answer reached the caller yet."""

    __slots__ = ("emitted",)

    def __init__(self) -> None:
        self.emitted = False


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The wait a response asks for: ``retry-after-ms``, ``retry-after`` in seconds or as an HTTP date."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    import email.utils

    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, float(when.timestamp()) - time.time())


def backoff_delay(attempt: int) -> float:
    """Exponential backoff with jitter: about 0.5 s, 1 s, 2 s... capped at 20 s (``attempt`` counts from 0)."""
    ceiling = min(_MAX_BACKOFF, _BASE_DELAY * 2.0**attempt)
    return ceiling * random.uniform(0.5, 1.0)


def iter_sse(lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    """``(event, data)`` for each server-sent event; multi-line data is joined with newlines, comments skipped."""
    event = ""
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield event or "message", "\n".join(data)
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        key, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if key == "data":
            data.append(value)
        elif key == "event":
            event = value
    if data:
        yield event or "message", "\n".join(data)


class ErrorInfo:
    """What an error body says: its message, and the ``code`` and ``type`` fields when it has them."""

    __slots__ = ("code", "message", "type")

    def __init__(self, message: str, code: str = "", type: str = "") -> None:
        self.message = message
        self.code = code
        self.type = type


def error_info(error: Any, fallback: str = "") -> ErrorInfo:
    """The ``ErrorInfo`` of an error object as providers send it: ``{"error": {"message", "type", "code"}}``
    (OpenAI, llama.cpp, Ollama), ``{"type": "error", "error": {...}}`` (Anthropic), a bare ``{"message", ...}``
    (vLLM) or a string."""
    if isinstance(error, Mapping) and "error" in error and not isinstance(error.get("message"), str):
        error = error["error"]
    if isinstance(error, str):
        return ErrorInfo(error[:500])
    if not isinstance(error, Mapping):
        return ErrorInfo(fallback or json.dumps(error)[:500])
    message = error.get("message") or error.get("type") or fallback or json.dumps(error)[:500]
    code = error.get("code")
    return ErrorInfo(
        str(message)[:500], str(code) if isinstance(code, str) else "", str(error.get("type") or "")
    )


def _response_error(response: httpx.Response) -> ErrorInfo:
    try:
        body = response.json()
    except ValueError:
        text = response.text.strip()
        return ErrorInfo(text[:500] if text else response.reason_phrase)
    return error_info(body, response.reason_phrase)


# How servers say "the conversation does not fit": OpenAI and vLLM ("maximum context length"), Anthropic
# ("prompt is too long", "exceed context limit"), llama.cpp ("exceeds the available context size"), Ollama
# ("the input length exceeds the context length"), vLLM's engine ("is too long to fit into the model").
_OVERFLOW_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error", "request_too_large"})
_OVERFLOW_WORDS = (
    "context_length_exceeded",
    "context length",
    "context window",
    "maximum context",
    "context size",
    "context limit",
    "prompt is too long",
    "input is too long",
    "too many tokens",
    "too long to fit",
    "exceeds the available context",
)


def is_context_overflow(status: int | None, info: ErrorInfo) -> bool:
    """Whether an error says the request is too big for the model (trimming the conversation is the cure)."""
    if status == 413 or info.code in _OVERFLOW_CODES or info.type in _OVERFLOW_CODES:
        return True
    low = info.message.lower()
    return any(word in low for word in _OVERFLOW_WORDS)


_REQUEST_ERRORS = frozenset(
    {"invalid_request_error", "authentication_error", "permission_error", "not_found_error", "billing_error"}
)


def http_error(spec: ModelSpec, response: httpx.Response) -> ModelError:
    """The ``ModelError`` for an error response (read already)."""
    status = response.status_code
    info = _response_error(response)
    where = f"model {spec.name!r} ({spec.base_url}): HTTP {status}"
    return classify_error(spec, where, status, info, retry_after_seconds(response.headers))


def classify_error(
    spec: ModelSpec, where: str, status: int | None, info: ErrorInfo, wait: float | None = None
) -> ModelError:
    """The ``ModelError`` for an error a server reported (as a response or inside a stream)."""
    from ..security import redact

    detail = redact(info.message)
    text = f"{where}: {detail}"
    if status in (401, 403):
        return ModelError(f"{text} (check the api_key)", kind="auth", status=status)
    if status == 429 or info.type == "rate_limit_error":
        return ModelError(text, kind="rate_limit", status=status, retryable=True, retry_after=wait)
    if is_context_overflow(status, info):  # before the server errors: llama.cpp and Ollama say it with a 500
        return ModelError(text, kind="context_length", status=status)
    if status is None:  # an error event inside a stream: worth another try unless it blames the request
        if info.type in _REQUEST_ERRORS:
            return ModelError(text, kind="bad_request")
        return ModelError(text, kind="server", retryable=True)
    if status in RETRY_STATUSES or status >= 500:
        return ModelError(text, kind="server", status=status, retryable=True, retry_after=wait)
    return ModelError(text, kind="bad_request", status=status)


def _transport_error(spec: ModelSpec, err: Exception) -> ModelError:
    import httpx

    where = f"model {spec.name!r} ({spec.base_url})"
    if isinstance(err, httpx.TimeoutException):
        return ModelError(
            f"{where}: no answer within {spec.timeout:g} s ({type(err).__name__})",
            kind="timeout",
            retryable=True,
        )
    return ModelError(f"{where}: {type(err).__name__}: {err}", kind="connection", retryable=True)


def _stop_reading(response: httpx.Response) -> None:
    """Shut the response's socket, so a read blocked on it returns now (the connection is not reused)."""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if sock is not None:
        import socket

        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def post_json(
    client: httpx.Client,
    spec: ModelSpec,
    url: str,
    body: dict[str, Any],
    headers: Mapping[str, str],
    handle: Callable[[httpx.Response, Attempt], ModelReply],
    *,
    cancel: CancelToken,
    on_retry: RetryCallback | None = None,
) -> ModelReply:
    """POST ``body`` and let ``handle`` read the answer; retry what is worth retrying, then raise ``ModelError``."""
    import httpx

    timeout = httpx.Timeout(spec.timeout, connect=min(spec.timeout, 15.0))
    attempt = 0
    while True:
        if cancel.cancelled:
            raise ModelError("cancelled", kind="cancelled")
        state = Attempt()
        try:
            with client.stream("POST", url, json=body, headers=dict(headers), timeout=timeout) as response:
                if response.status_code >= 400:
                    response.read()
                    raise http_error(spec, response)
                # a cancel wakes a read that waits for the server (a stream can be silent for minutes)
                stop = cancel.on_cancel(functools.partial(_stop_reading, response))
                try:
                    return handle(response, state)
                finally:
                    stop()
        except ModelError as err:
            if cancel.cancelled:
                raise ModelError("cancelled", kind="cancelled") from None
            error = err
        except (httpx.TransportError, httpx.StreamError) as err:
            if cancel.cancelled:
                raise ModelError("cancelled", kind="cancelled") from None
            error = _transport_error(spec, err)
        if not error.retryable or state.emitted or attempt >= spec.max_retries:
            raise error
        wait = error.retry_after
        if wait is not None and wait > spec.max_retry_wait:
            raise ModelError(
                f"{error.message} (the server asks to retry after {wait:g} s, longer than max_retry_wait)",
                kind=error.kind,
                status=error.status,
                retry_after=wait,
            )
        delay = wait if wait is not None else backoff_delay(attempt)
        attempt += 1
        log.info("model %s: %s; retry %d in %.1f s", spec.name, error.message, attempt, delay)
        if on_retry is not None:
            on_retry(attempt, delay, error.message)
        if cancel.wait(delay):
            raise ModelError("cancelled", kind="cancelled")
