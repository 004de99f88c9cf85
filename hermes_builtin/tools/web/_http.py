"""Calling a JSON web API for a tool: short waits on rate limits, errors the model can act on.

``call_json`` sends one request, waits out a ``429``/``503`` whose ``Retry-After`` (or Brave's
``X-RateLimit-Reset``) is short, and turns every failure into ``ServiceError`` with a message that names the
service and what to do (retry later, fix the key), never a traceback.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from hermes_core import ToolError

if TYPE_CHECKING:
    import httpx

RETRY_STATUSES = (429, 503)
MAX_ATTEMPTS = 3


class ServiceError(ToolError):
    """A web service failed; ``status`` is its HTTP status (0 when it was not reached)."""

    def __init__(self, message: str, status: int = 0, retry_after: float | None = None) -> None:
        super().__init__(message, retryable=status in RETRY_STATUSES or status >= 500 or status == 0)
        self.status = status
        self.retry_after = retry_after


def retry_after(response: httpx.Response) -> float | None:
    """Seconds the service asks us to wait: ``Retry-After`` (seconds or a date), else ``X-RateLimit-Reset``."""
    value = response.headers.get("retry-after")
    if value:
        value = value.strip()
        try:
            return max(0.0, float(value))
        except ValueError:
            import email.utils  # only for an HTTP-date Retry-After; checks import this module at start

            when = email.utils.parsedate_to_datetime(value) if "," in value else None
            if when is not None:
                return max(0.0, when.timestamp() - time.time())
    reset = response.headers.get("x-ratelimit-reset")  # Brave: "1, 1419704" (per window, shortest first)
    if reset:
        try:
            return max(0.0, float(reset.split(",")[0]))
        except ValueError:
            return None
    return None


def _detail(response: httpx.Response) -> str:
    """The error message a JSON API put in its body (the shapes of OpenAI, Brave, Tavily and Exa)."""
    try:
        body = response.json()
    except ValueError:
        text = response.text.strip()
        return text[:200]
    if isinstance(body, dict):
        err = body.get("error", body.get("detail"))
        if isinstance(err, dict):
            for key in ("message", "detail", "error", "code"):
                if isinstance(err.get(key), str):
                    return str(err[key])[:300]
        if isinstance(err, str):
            return err[:300]
        if isinstance(body.get("message"), str):
            return str(body["message"])[:300]
    return json.dumps(body)[:200]


def call_json(
    client: httpx.Client,
    service: str,
    method: str,
    url: str,
    *,
    max_wait: float = 10.0,
    **kwargs: Any,
) -> Any:
    """Send a request and return its JSON body; ``ServiceError`` on any failure (after short rate-limit waits)."""
    import httpx

    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            response = client.request(method, url, **kwargs)
        except httpx.TimeoutException:
            raise ServiceError(f"{service} did not answer in time; try again later") from None
        except httpx.HTTPError as err:
            raise ServiceError(f"{service} could not be reached ({type(err).__name__}: {err})") from None
        status = response.status_code
        if status in RETRY_STATUSES:
            wait = retry_after(response)
            if attempt < MAX_ATTEMPTS and wait is not None and wait <= max_wait:
                time.sleep(wait)
                continue
            what = "rate limit reached" if status == 429 else "temporarily unavailable"
            hint = f"; retry after {wait:.0f} s" if wait is not None else "; retry later"
            raise ServiceError(f"{service}: {what} (HTTP {status}){hint}", status, wait)
        if status in (401, 403):
            raise ServiceError(
                f"{service} refused the request (HTTP {status}: {_detail(response)}); check the API key "
                "in the configuration",
                status,
            )
        if status >= 400:
            raise ServiceError(f"{service} answered HTTP {status}: {_detail(response)}", status)
        try:
            return response.json()
        except ValueError:
            snippet = response.text[:120].replace("\n", " ")
            raise ServiceError(f"{service} sent a malformed answer (not JSON): {snippet!r}", status) from None
    raise AssertionError("unreachable")
