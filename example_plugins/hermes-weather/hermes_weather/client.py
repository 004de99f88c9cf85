"""HTTP access to the weather service: every failure becomes a ``ToolError`` the model can act on."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_core import ToolError

if TYPE_CHECKING:
    import httpx

__all__ = ["fetch_json", "malformed"]


def malformed(service: str, detail: str) -> ToolError:
    """The error for a response that is not shaped as the service documents."""
    return ToolError(f"the {service} service sent a malformed response ({detail}); try again later")


def fetch_json(client: httpx.Client, url: str, params: dict[str, Any], service: str) -> dict[str, Any]:
    """GET ``url`` and return its JSON object, or raise a ``ToolError`` saying what went wrong."""
    import httpx

    try:
        response = client.get(url, params=params)
    except httpx.TimeoutException:
        timeout = client.timeout.read
        waited = f" within {timeout:g} s" if timeout is not None else ""
        raise ToolError(f"the {service} service did not answer{waited}; try again later") from None
    except httpx.HTTPError as exc:
        raise ToolError(
            f"could not reach the {service} service ({type(exc).__name__}); try again later"
        ) from None
    status = response.status_code
    if status >= 500:
        raise ToolError(f"the {service} service is unavailable (HTTP {status}); try again later")
    if status == 429:
        raise ToolError(f"the {service} service is rate limiting requests (HTTP 429); try again in a minute")
    if status >= 400:
        reason = _reason(response)
        raise ToolError(
            f"the {service} service refused the request (HTTP {status}{': ' + reason if reason else ''})",
            retryable=False,
        )
    if status != 200:
        raise malformed(service, f"unexpected HTTP {status}")
    try:
        data = response.json()
    except ValueError:
        raise malformed(service, "not JSON") from None
    if not isinstance(data, dict):
        raise malformed(service, f"expected a JSON object, got {type(data).__name__}")
    return data


def _reason(response: httpx.Response) -> str:
    """Open-Meteo explains a 400 as ``{"error": true, "reason": "..."}``; keep it short."""
    try:
        data = response.json()
    except ValueError:
        return ""
    reason = data.get("reason") if isinstance(data, dict) else None
    return str(reason)[:200] if reason else ""
