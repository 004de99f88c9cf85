"""The ``[plugins.web]`` section: search backends, fetch limits and the network policy for fetched URLs.

```toml
[plugins.web]
search = ["brave", "searxng"]            # backends in order of use (default: every configured one)
searxng_url = "http://127.0.0.1:8888"
brave_api_key = { env = "BRAVE_API_KEY" }
tavily_api_key = { env = "TAVILY_API_KEY" }
exa_api_key = { env = "EXA_API_KEY" }
timeout = 20                             # seconds per request
max_bytes = 10_000_000                   # largest page web_extract downloads
max_redirects = 5
allow_networks = ["10.0.0.0/8"]          # non-public addresses fetched URLs may reach (default: none)
resolve = { "wiki.internal" = "10.0.0.5" }
```
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from hermes_core.security import NetworkPolicy

BACKENDS = ("searxng", "brave", "tavily", "exa")
# The key that makes each backend usable, and its default endpoint (``<name>_url`` overrides it).
_REQUIRED = {
    "searxng": "searxng_url",
    "brave": "brave_api_key",
    "tavily": "tavily_api_key",
    "exa": "exa_api_key",
}
DEFAULT_URLS = {
    "brave": "https://api.search.brave.com/res/v1/web/search",
    "tavily": "https://api.tavily.com/search",
    "exa": "https://api.exa.ai/search",
}
USER_AGENT = "hermes-tools (+https://pypi.org/project/hermes-tools/)"


class SettingsError(ValueError):
    """A configuration value is missing or malformed; the message names the section and key."""


def _number(section: Mapping[str, Any], where: str, key: str, default: float, low: float = 0.0) -> float:
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= low:
        raise SettingsError(f"[plugins.{where}] {key} must be a number above {low:g}, got {value!r}")
    return float(value)


def _int(section: Mapping[str, Any], where: str, key: str, default: int, low: int = 0) -> int:
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise SettingsError(f"[plugins.{where}] {key} must be an integer >= {low}, got {value!r}")
    return value


def policy_from(section: Mapping[str, Any], where: str) -> NetworkPolicy | None:
    """The section's network policy; None when it sets neither ``allow_networks`` nor ``resolve`` (the default
    policy, made where a connection is vetted: the tools' checks then need not load the SSRF layer)."""
    if section.get("allow_networks") is None and section.get("resolve") is None:
        return None
    from hermes_core.security import NetworkPolicy

    try:
        return NetworkPolicy.from_config(section)
    except ValueError as err:
        raise SettingsError(f"[plugins.{where}] {err}") from None


class WebSettings(NamedTuple):
    backends: tuple[str, ...] = ()
    unusable: Mapping[str, str] = MappingProxyType({})  # backend -> why it cannot be used
    endpoints: Mapping[str, str] = MappingProxyType({})
    keys: Mapping[str, str] = MappingProxyType({})
    timeout: float = 20.0
    max_bytes: int = 10_000_000
    max_redirects: int = 5
    max_retry_wait: float = 10.0
    user_agent: str = USER_AGENT
    policy: NetworkPolicy | None = None

    @classmethod
    def from_config(cls, section: Mapping[str, Any]) -> WebSettings:
        chosen = section.get("search")
        if chosen is None:
            order: tuple[str, ...] = tuple(b for b in BACKENDS if _REQUIRED[b] in section)
        else:
            names = [chosen] if isinstance(chosen, str) else chosen
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise SettingsError("[plugins.web] search must be a backend name or a list of them")
            unknown = [n for n in names if n not in BACKENDS]
            if unknown:
                raise SettingsError(
                    f"[plugins.web] search: unknown backend {unknown[0]!r}; use {', '.join(BACKENDS)}"
                )
            order = tuple(dict.fromkeys(names))
        usable: list[str] = []
        unusable: dict[str, str] = {}
        endpoints: dict[str, str] = {}
        keys: dict[str, str] = {}
        for name in order:
            required = _REQUIRED[name]
            value = section.get(required)
            if not isinstance(value, str) or not value.strip():
                unusable[name] = (
                    f"{required} is not set"
                    if required not in section
                    else f"{required} is empty (an unset environment variable or missing file?)"
                )
                continue
            url = value if name == "searxng" else section.get(f"{name}_url", DEFAULT_URLS[name])
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise SettingsError(f"[plugins.web] {name}_url must be an http(s) URL, got {url!r}")
            endpoints[name] = url.rstrip("/")
            if name != "searxng":
                keys[name] = value.strip()
            usable.append(name)
        agent = section.get("user_agent", USER_AGENT)
        if not isinstance(agent, str) or not agent.strip():
            raise SettingsError("[plugins.web] user_agent must be a non-empty string")
        return cls(
            backends=tuple(usable),
            unusable=unusable,
            endpoints=endpoints,
            keys=keys,
            timeout=_number(section, "web", "timeout", 20.0),
            max_bytes=_int(section, "web", "max_bytes", 10_000_000, 1),
            max_redirects=_int(section, "web", "max_redirects", 5),
            max_retry_wait=_number(section, "web", "max_retry_wait", 10.0, -1.0),
            user_agent=agent,
            policy=policy_from(section, "web"),
        )

    def search_problem(self) -> str | None:
        """Why web_search cannot run (None when at least one backend is usable)."""
        if self.backends:
            return None
        if self.unusable:
            return "no usable search backend: " + "; ".join(f"{b}: {why}" for b, why in self.unusable.items())
        return (
            "no search backend configured; set one of searxng_url, brave_api_key, tavily_api_key or "
            "exa_api_key in [plugins.web]"
        )
