"""HTTP for the tools that call outside services: one client per system, timeouts, 429 handling, clear errors.

A ``Service`` knows an API's base URL, its auth headers, the secrets that must never leave this process and
how to read an error body. Every failure becomes a ``ToolError`` the model can act on: a timeout, an
unreachable host, rejected credentials (with how to fix them), a rate limit (retried once when the service asks
for a short wait, else reported with when to retry), an error status with the service's own explanation, or a
reply that is not what the API documents. Secrets are scrubbed from every message, and from httpx's own log
records (Telegram puts the bot token in the URL path).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypeVar
from urllib.parse import quote, urlsplit

from hermes_core import ToolError, __version__

if TYPE_CHECKING:
    import logging

    import httpx

T = TypeVar("T")


def _log() -> logging.Logger:
    import logging

    return logging.getLogger("hermes.builtin.remote")


class Owner(Protocol):
    """What the HTTP helpers need from a call context or a tool system: its per-system stash."""

    def stash(self, key: str, factory: Callable[[], T], cleanup: Callable[[T], Any] | None = None) -> T: ...


__all__ = [
    "HTTP_STASH_KEY",
    "MAX_RETRY_WAIT",
    "Owner",
    "Service",
    "download",
    "field",
    "http_client",
    "retry_after",
    "scrub",
]


HTTP_STASH_KEY = "remote.http"
MAX_RETRY_WAIT = 10.0  # a 429 that asks for a longer wait is reported to the model instead of waited out
DEFAULT_WAIT = 1.0  # the pause before the one retry when a 429 does not say how long to wait
MASK = "[REDACTED]"

_known_secrets: frozenset[str] = (
    frozenset()
)  # replaced whole under the lock, so the log filter never sees it change
_filter_lock = threading.Lock()
_filter_installed = False


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (and its URL-encoded form) replaced by ``[REDACTED]``."""
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= 4:
            text = text.replace(secret, MASK)
            encoded = quote(secret, safe="")
            if encoded != secret:
                text = text.replace(encoded, MASK)
    return text


def _scrub_record(record: logging.LogRecord) -> bool:
    """A filter for httpx's request log lines (``HTTP Request: POST <url>``): known service secrets removed."""
    if _known_secrets:
        message = record.getMessage()
        clean = scrub(message, _known_secrets)
        if clean != message:
            record.msg, record.args = clean, None
    return True


def _remember(secrets: Iterable[str]) -> None:
    global _filter_installed, _known_secrets
    with _filter_lock:
        fresh = {s for s in secrets if len(s) >= 4} - _known_secrets
        if fresh:
            _known_secrets = _known_secrets | fresh
        if not _filter_installed:
            import logging  # (here, not at import: a start that calls no service need not load it)

            logging.getLogger("httpx").addFilter(_scrub_record)
            _filter_installed = True


def _new_client() -> httpx.Client:
    import httpx

    return httpx.Client(
        timeout=httpx.Timeout(30.0, connect=10.0),
        follow_redirects=False,
        headers={"User-Agent": f"hermes-tools/{__version__}"},
    )


def http_client(context: Owner) -> httpx.Client:
    """The system's shared HTTP client (made on first use, closed with the system)."""
    return context.stash(HTTP_STASH_KEY, _new_client)


def _seconds(value: str) -> float | None:
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    import email.utils  # only for the rare HTTP-date form of Retry-After

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def retry_after(response: httpx.Response) -> float | None:
    """How long a 429 asks us to wait, in seconds: from the body (Discord ``retry_after``, Telegram
    ``parameters.retry_after``) or the ``Retry-After`` / ``X-RateLimit-Reset-After`` / ``x-ogw-ratelimit-reset``
    headers; None when it does not say."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        for holder in (body, body.get("parameters")):
            value = holder.get("retry_after") if isinstance(holder, dict) else None
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
                return float(value)
    for name in ("retry-after", "x-ratelimit-reset-after", "x-ogw-ratelimit-reset"):
        raw = response.headers.get(name)
        if raw:
            seconds = _seconds(raw.strip())
            if seconds is not None:
                return seconds
    return None


def field(value: Any, key: str, kind: type | tuple[type, ...], service: str, what: str) -> Any:
    """``value[key]`` when ``value`` is a dict holding a ``kind``; else a ToolError naming the malformed reply."""
    item = value.get(key) if isinstance(value, dict) else None
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(item, kinds) or (isinstance(item, bool) and bool not in kinds):
        raise ToolError(f"{service} sent a malformed reply to {what}: no valid {key!r} in it")
    return item


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class Service:
    """One outside API: base URL, auth headers, secrets to scrub, and how to explain its failures.

    ``detail(body)`` pulls the human message out of a parsed error body (``{"error": {"message": ...}}``...);
    ``auth_hint`` tells the model (and through it the user) how to fix rejected credentials.
    """

    def __init__(
        self,
        name: str,
        base_url: str,
        *,
        headers: Mapping[str, str] | None = None,
        secrets: Iterable[str | None] = (),
        auth_hint: str = "",
        timeout: float = 30.0,
        detail: Callable[[Any], str | None] | None = None,
    ) -> None:
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.headers = dict(headers or {})
        self.secrets = tuple(s for s in secrets if s)
        self.auth_hint = auth_hint
        self.timeout = timeout
        self._detail = detail
        _remember(self.secrets)

    def url(self, path: str) -> str:
        if path.startswith(("http://", "https://")):
            return path
        return f"{self.base_url}/{path.lstrip('/')}"

    def scrub(self, text: str) -> str:
        return scrub(text, self.secrets)

    def send(
        self,
        context: Owner,
        method: str,
        path: str,
        *,
        what: str,
        timeout: float | None = None,
        headers: Mapping[str, str] | None = None,
        retry: bool = True,
        **kwargs: Any,
    ) -> httpx.Response:
        """Send one request; a 429 is retried once when the wait it asks for is short (unless ``retry`` is
        False). Returns any other response (error statuses included); transport failures and lasting 429s raise
        ``ToolError``."""
        import httpx

        client = http_client(context)
        merged = {**self.headers, **(headers or {})}
        limit = timeout if timeout is not None else self.timeout
        for attempt in (1, 2):
            try:
                response = client.request(method, self.url(path), headers=merged, timeout=limit, **kwargs)
            except httpx.TimeoutException:
                raise ToolError(
                    f"{self.name} did not answer within {limit:g} s while {what}; try again later"
                ) from None
            except (httpx.HTTPError, httpx.InvalidURL) as err:
                reason = self.scrub(_one_line(f"{type(err).__name__}: {err}"))
                raise ToolError(f"cannot reach {self.name} while {what} ({reason})") from None
            _log().debug("%s, %s: HTTP %d", self.name, what, response.status_code)
            if response.status_code != 429:
                return response
            wait = retry_after(response)
            if retry and attempt == 1 and (wait is None or wait <= MAX_RETRY_WAIT):
                time.sleep(DEFAULT_WAIT if wait is None else wait)
                continue
            self.rate_limited(what, wait)
        raise AssertionError("unreachable")

    def rate_limited(self, what: str, wait: float | None) -> NoReturn:
        when = f"retry after {max(math.ceil(wait), 1)} s" if wait is not None else "wait a minute and retry"
        raise ToolError(f"{self.name} is rate limiting these requests ({what}); {when}")

    def detail(self, response: httpx.Response) -> str:
        """The service's own explanation of an error response, scrubbed and shortened."""
        text = ""
        try:
            body = response.json()
        except ValueError:
            body = None
        if body is not None and self._detail is not None:
            try:
                text = self._detail(body) or ""
            except (AttributeError, KeyError, TypeError, IndexError):
                text = ""
        if not text:
            text = response.text
        return self.scrub(_one_line(str(text)))

    def fail(self, response: httpx.Response, what: str) -> NoReturn:
        """Raise the ToolError that explains an error status."""
        code = response.status_code
        detail = self.detail(response)
        said = f": {detail}" if detail else ""
        if code == 401:
            hint = f" {self.auth_hint}" if self.auth_hint else ""
            raise ToolError(f"{self.name} rejected the credentials (HTTP 401{said}).{hint}", retryable=False)
        if code == 403:
            raise ToolError(
                f"{self.name} refused {what} (HTTP 403{said}); the credentials lack a permission it needs",
                retryable=False,
            )
        if code == 404:
            raise ToolError(f"{self.name}: not found while {what} (HTTP 404{said})")
        if code >= 500:
            raise ToolError(
                f"{self.name} had a server error while {what} (HTTP {code}{said}); try again later"
            )
        raise ToolError(f"{self.name} refused {what} (HTTP {code}{said})")

    def parse(self, response: httpx.Response, what: str) -> Any:
        """The JSON body of a response; a ToolError when it is not JSON."""
        try:
            return response.json()
        except ValueError:
            kind = response.headers.get("content-type", "no content type").split(";")[0]
            raise ToolError(
                f"{self.name} sent a malformed reply to {what} (expected JSON, got {kind}, HTTP "
                f"{response.status_code})"
            ) from None

    def call(self, context: Owner, method: str, path: str, *, what: str, **kwargs: Any) -> Any:
        """Send, raise for error statuses, and return the parsed JSON body (None for an empty 204)."""
        response = self.send(context, method, path, what=what, **kwargs)
        if response.status_code >= 400:
            self.fail(response, what)
        if response.status_code == 204 or not response.content:
            return None
        return self.parse(response, what)


def download(
    context: Owner,
    url: str,
    *,
    what: str,
    max_bytes: int,
    timeout: float,
    headers: Mapping[str, str] | None = None,
    secrets: Iterable[str] = (),
) -> tuple[bytes, str]:
    """Fetch ``url`` (a provider's result file) into memory: at most ``max_bytes``, within ``timeout`` seconds
    in all. Returns ``(data, content type)``. Only http(s); the URL itself never appears in an error (signed
    URLs carry credentials). ``headers`` are sent only when given (credentials stay with their own service)."""
    import httpx

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ToolError(f"the provider gave a {what} location that is not an http(s) URL")
    host = parts.hostname
    deadline = time.monotonic() + timeout
    limit_mb = max_bytes / 1_000_000
    client = http_client(context)
    chunks: list[bytes] = []
    total = 0
    try:
        with client.stream(
            "GET", url, headers=dict(headers or {}), follow_redirects=True, timeout=min(timeout, 30.0)
        ) as response:
            if response.status_code >= 400:
                raise ToolError(f"downloading the {what} from {host} failed: HTTP {response.status_code}")
            declared = response.headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > max_bytes:
                raise ToolError(
                    f"the {what} is {int(declared) / 1_000_000:.1f} MB, over the {limit_mb:g} MB download limit"
                )
            for chunk in response.iter_bytes():
                total += len(chunk)
                if total > max_bytes:
                    raise ToolError(f"the {what} is larger than the {limit_mb:g} MB download limit; stopped")
                if time.monotonic() > deadline:
                    raise ToolError(f"downloading the {what} from {host} took over {timeout:g} s; stopped")
                chunks.append(chunk)
            kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    except httpx.TimeoutException:
        raise ToolError(f"downloading the {what} from {host} timed out") from None
    except (httpx.HTTPError, httpx.InvalidURL) as err:
        reason = scrub(_one_line(type(err).__name__), secrets)
        raise ToolError(f"downloading the {what} from {host} failed ({reason})") from None
    return b"".join(chunks), kind
