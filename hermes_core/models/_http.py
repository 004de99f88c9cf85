"""HTTP for model clients: one POST with retries (429/5xx/transport errors, ``retry-after`` honoured), server-sent
events, and readable errors.

A request is retried only while nothing of its answer has reached the caller: once streamed text was handed
out, a failure is final (a retry would repeat what the user already saw).
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ._types import CancelToken, ModelError, ModelReply, RetryCallback

if TYPE_CHECKING:
    import httpx

    from ._config import ModelSpec

__all__ = ["RETRY_STATUSES", "Attempt", "backoff_delay", "iter_sse", "post_json", "retry_after_seconds"]

log = logging.getLogger("hermes.models")

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


def _error_detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        text = response.text.strip()
        return text[:500] if text else response.reason_phrase
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping):
            message = error.get("message") or error.get("type") or json.dumps(error)[:500]
            return str(message)[:500]
        if isinstance(error, str):
            return error[:500]
    return json.dumps(body)[:500]


def _is_context_length(status: int, detail: str) -> bool:
    low = detail.lower()
    if "context_length" in low or "context length" in low or "context window" in low:
        return True
    return status in (400, 413) and (
        "too long" in low or "too many tokens" in low or "maximum context" in low
    )


def http_error(spec: ModelSpec, response: httpx.Response) -> ModelError:
    """The ``ModelError`` for an error response (read already)."""
    from ..security import redact

    status = response.status_code
    detail = redact(_error_detail(response))
    where = f"model {spec.name!r} ({spec.base_url}): HTTP {status}"
    wait = retry_after_seconds(response.headers)
    if status in (401, 403):
        return ModelError(f"{where}: {detail} (check the api_key)", kind="auth", status=status)
    if status == 429:
        return ModelError(
            f"{where}: {detail}", kind="rate_limit", status=status, retryable=True, retry_after=wait
        )
    if status in RETRY_STATUSES or status >= 500:
        return ModelError(
            f"{where}: {detail}", kind="server", status=status, retryable=True, retry_after=wait
        )
    if _is_context_length(status, detail):
        return ModelError(f"{where}: {detail}", kind="context_length", status=status)
    return ModelError(f"{where}: {detail}", kind="bad_request", status=status)


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
                return handle(response, state)
        except ModelError as err:
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
