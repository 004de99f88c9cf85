"""The Feishu / Lark open API for the feishu tools: the app's tenant access token (cached per system, refreshed
before it expires and once more when the API says it is invalid) and the ``{"code", "msg", "data"}`` envelope.

Configuration (``[plugins.feishu]``)::

    app_id = "cli_a1b2c3d4e5"
    app_secret = { env = "FEISHU_APP_SECRET" }
    domain = "feishu"                        # or "lark" (open.larksuite.com); base_url overrides both
    timeout = 20                             # seconds per request
"""

from __future__ import annotations

import threading
import time
from typing import Any

from hermes_core import CallContext, ToolError

from ._remote import Owner, Service
from ._settings import as_float, as_text, section

__all__ = ["ENABLE", "SECTION", "TOKEN_KEY", "base_url", "configured", "request"]

SECTION = "feishu"
ENABLE = (
    'set [plugins.feishu] app_id = "cli_..." and app_secret = {env = "FEISHU_APP_SECRET"} in the hermes config '
    '(domain = "lark" for Lark)'
)
TOKEN_KEY = "feishu.token"
REFRESH_MARGIN = 300.0  # renew this long before the token's expiry
DOMAINS = {"feishu": "https://open.feishu.cn", "lark": "https://open.larksuite.com"}
# codes meaning the tenant access token is missing, invalid or expired: renew it and try once more
AUTH_CODES = frozenset({99991661, 99991663, 99991664, 99991665, 99991668, 99991677})
SCOPE_CODES = frozenset({99991672, 99991679, 1069902, 91403})


def configured(source: Any) -> bool:
    cfg = section(source, SECTION)
    return bool(as_text(cfg, "app_id") and as_text(cfg, "app_secret"))


def base_url(cfg: dict[str, Any]) -> str:
    domain = as_text(cfg, "domain", "feishu") or "feishu"
    default = DOMAINS.get(domain, DOMAINS["feishu"])
    return (as_text(cfg, "base_url", default) or default).rstrip("/")


class _TokenBox:
    """The stash value: one tenant token per (base URL, app id), renewed under a lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.key: tuple[str, str] | None = None
        self.token: str | None = None
        self.expires = 0.0


def _detail(body: Any) -> str | None:
    if isinstance(body, dict) and ("msg" in body or "code" in body):
        return f"code {body.get('code')}: {body.get('msg')}"
    return None


def _tenant_token(owner: Owner, cfg: dict[str, Any], *, renew: bool) -> tuple[str, str]:
    """``(token, app secret)``: the cached token while it has over ``REFRESH_MARGIN`` left, else a new one."""
    app_id, secret = as_text(cfg, "app_id"), as_text(cfg, "app_secret")
    if not app_id or not secret:
        raise ToolError(f"not configured: {ENABLE}", retryable=False)
    base = base_url(cfg)
    box = owner.stash(TOKEN_KEY, _TokenBox, lambda _box: None)
    with box.lock:
        now = time.monotonic()
        fresh = box.key == (base, app_id) and box.token and box.expires - REFRESH_MARGIN > now
        if fresh and not renew:
            return str(box.token), secret
        api = Service("Feishu", base, secrets=[secret], timeout=15.0, detail=_detail)
        what = "getting a tenant access token"
        reply = api.call(
            owner,
            "POST",
            "open-apis/auth/v3/tenant_access_token/internal",
            what=what,
            json={"app_id": app_id, "app_secret": secret},
        )
        if not isinstance(reply, dict) or not isinstance(reply.get("code"), int):
            raise ToolError(f"Feishu sent a malformed reply to {what}")
        if reply["code"] != 0:
            raise ToolError(
                f"Feishu rejected the app credentials ({api.scrub(str(_detail(reply)))}); check [plugins.feishu] "
                "app_id and app_secret",
                retryable=False,
            )
        token, expire = reply.get("tenant_access_token"), reply.get("expire")
        if not isinstance(token, str) or not token or not isinstance(expire, int) or expire <= 0:
            raise ToolError(f"Feishu sent a malformed reply to {what} (no token or expiry)")
        box.key, box.token, box.expires = (base, app_id), token, now + expire
        return token, secret


def request(
    context: CallContext,
    method: str,
    path: str,
    *,
    what: str,
    params: dict[str, Any] | None = None,
    json: Any = None,
) -> dict[str, Any]:
    """Call the open API with the tenant token and return the envelope's ``data``; an auth error renews the
    token and retries once; any other non-zero code is a ToolError with Feishu's message."""
    cfg = section(context, SECTION)
    base = base_url(cfg)
    for attempt in (1, 2):
        token, secret = _tenant_token(context, cfg, renew=attempt == 2)
        api = Service(
            "Feishu",
            base,
            headers={"Authorization": f"Bearer {token}"},
            secrets=[secret, token],
            auth_hint="Check [plugins.feishu] app_id and app_secret.",
            timeout=as_float(cfg, "timeout", 20.0, 0.1, 300.0),
            detail=_detail,
        )
        response = api.send(context, method, path, what=what, params=params, json=json)
        if response.status_code >= 500:
            api.fail(response, what)
        body = api.parse(response, what)
        code = body.get("code") if isinstance(body, dict) else None
        if not isinstance(code, int):
            if response.status_code >= 400:
                api.fail(response, what)
            raise ToolError(f"Feishu sent a malformed reply to {what} (no 'code' in it)")
        if (code in AUTH_CODES or response.status_code == 401) and attempt == 1:
            continue
        if code in AUTH_CODES or response.status_code == 401:
            raise ToolError(
                f"Feishu rejected the app's access token ({api.scrub(str(_detail(body)))}). {api.auth_hint}"
            )
        if code != 0:
            hint = (
                " The app lacks a permission (scope) for this; add it in the developer console."
                if code in SCOPE_CODES
                else ""
            )
            raise ToolError(f"Feishu refused {what} ({api.scrub(str(_detail(body)))}).{hint}")
        data = body.get("data", {})
        if not isinstance(data, dict):
            raise ToolError(f"Feishu sent a malformed reply to {what} ('data' is not an object)")
        return data
    raise AssertionError("unreachable")
