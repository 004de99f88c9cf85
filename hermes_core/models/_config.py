"""The ``[models]`` table: named model endpoints, one of them the default.

```toml
[models]
default = "local"                      # optional when only one model is configured

[models.local]                         # any OpenAI-compatible server: llama.cpp, vLLM, Ollama, LM Studio...
base_url = "http://127.0.0.1:8080/v1"
model = "qwen2.5-7b-instruct"          # default: the table's name
context_window = 32768                 # tokens; sizes the agent's context budget

[models.claude]
provider = "anthropic"
model = "claude-sonnet-4-5"
api_key = { env = "ANTHROPIC_API_KEY" }
max_tokens = 8192
```

Keys of a model: ``provider`` ("openai", the default, or "anthropic"), ``model``, ``base_url``, ``api_key``
(a string, ``{env = "VAR"}`` or ``{file = "path"}``), ``headers`` (values may be secrets too), ``timeout``
(seconds without data, default 120), ``max_retries`` (default 3), ``max_retry_wait`` (the longest
``retry-after`` honoured, default 60 s), ``max_tokens``, ``temperature``, ``context_window``, ``stream``
(default true), ``stream_usage`` (default true: an OpenAI-compatible stream is asked for its token usage with
``stream_options``; false for a server that refuses the field), ``keep_reasoning`` (default true: the reasoning
an OpenAI-compatible server returns with tool calls is sent back within the same task, as DeepSeek and
OpenRouter ask) and ``params`` (extra request fields sent as they are, e.g. Anthropic's
``thinking = { type = "enabled", budget_tokens = 4096 }``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..config import Config, ConfigError, resolve_secret
from ._problem import NO_MODEL, where

__all__ = [
    "PROVIDERS",
    "ModelConfigError",
    "ModelSpec",
    "default_model_name",
    "model_specs",
    "resolve_spec",
]

PROVIDERS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}
_HOSTED = {"api.openai.com", "api.anthropic.com"}


class ModelConfigError(ConfigError):
    """The ``[models]`` table cannot give the model asked for (none configured, unknown name, missing key)."""


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """One configured model, secrets resolved. ``api_key_source`` says where the key comes from (for errors)."""

    name: str
    provider: str = "openai"
    model: str = ""
    base_url: str = ""
    api_key: str | None = field(default=None, repr=False)
    api_key_source: str = ""
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    timeout: float = 120.0
    max_retries: int = 3
    max_retry_wait: float = 60.0
    max_tokens: int | None = None
    temperature: float | None = None
    context_window: int | None = None
    stream: bool = True
    stream_usage: bool = True
    keep_reasoning: bool = True
    params: Mapping[str, Any] = field(default_factory=dict)

    def problem(self) -> str | None:
        """Why this model cannot be used as configured (a key that is configured but empty), else None."""
        if self.api_key is None and self.api_key_source:
            return f"model {self.name!r}: its api_key ({self.api_key_source}) is not set"
        host = self.base_url.split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0]
        if self.api_key is None and host in _HOSTED:
            return f'model {self.name!r}: {host} needs an api_key (e.g. api_key = {{ env = "..." }})'
        return None


def _source(raw: Any) -> str:
    if isinstance(raw, Mapping) and "env" in raw:
        return f"environment variable {raw['env']}"
    if isinstance(raw, Mapping) and "file" in raw:
        return f"file {raw['file']}"
    return ""


def _spec(name: str, table: Mapping[str, Any], where: str) -> ModelSpec:
    loc = f"{where}: [models.{name}]"
    provider = str(table.get("provider", "openai"))
    if provider not in PROVIDERS:
        raise ConfigError(f"{loc}: provider must be one of {', '.join(PROVIDERS)}, got {provider!r}")
    base_url = str(table.get("base_url") or PROVIDERS[provider]).rstrip("/")
    if not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"{loc}: base_url must start with http:// or https://, got {base_url!r}")
    raw_key = table.get("api_key")
    if raw_key is not None and not isinstance(raw_key, (str, Mapping)):
        raise ConfigError(f'{loc}: api_key must be a string or {{ env = "VAR" }} / {{ file = "path" }}')
    key = resolve_secret(raw_key)
    if key is not None and not isinstance(key, str):
        raise ConfigError(f'{loc}: api_key must be a string or {{ env = "VAR" }} / {{ file = "path" }}')
    headers = {str(k): str(v) for k, v in resolve_secret(dict(table.get("headers") or {})).items() if v}
    for key_name in ("max_tokens", "context_window"):
        value = table.get(key_name)
        if value is not None and value <= 0:
            raise ConfigError(f"{loc}: {key_name} must be positive, got {value}")
    if float(table.get("timeout", 120.0)) <= 0:
        raise ConfigError(f"{loc}: timeout must be positive")
    if int(table.get("max_retries", 3)) < 0:
        raise ConfigError(f"{loc}: max_retries must be 0 or more")
    return ModelSpec(
        name=name,
        provider=provider,
        model=str(table.get("model") or name),
        base_url=base_url,
        api_key=key or None,
        api_key_source=_source(raw_key) if raw_key is not None else "",
        headers=headers,
        timeout=float(table.get("timeout", 120.0)),
        max_retries=int(table.get("max_retries", 3)),
        max_retry_wait=float(table.get("max_retry_wait", 60.0)),
        max_tokens=table.get("max_tokens"),
        temperature=table.get("temperature"),
        context_window=table.get("context_window"),
        stream=bool(table.get("stream", True)),
        stream_usage=bool(table.get("stream_usage", True)),
        keep_reasoning=bool(table.get("keep_reasoning", True)),
        params=dict(table.get("params") or {}),
    )


def model_specs(config: Config) -> dict[str, ModelSpec]:
    """Every model of the ``[models]`` table, by name; a bad entry raises ``ConfigError`` naming it."""
    table = config.data.get("models") or {}
    at = where(config)
    return {name: _spec(name, value, at) for name, value in table.items() if isinstance(value, Mapping)}


def default_model_name(config: Config) -> str | None:
    """``models.default``, or the only model when exactly one is configured, else None."""
    table = config.data.get("models") or {}
    default = table.get("default")
    if isinstance(default, str) and default:
        return default
    names = [n for n, v in table.items() if isinstance(v, Mapping)]
    return names[0] if len(names) == 1 else None


def resolve_spec(config: Config, name: str | None = None) -> ModelSpec:
    """The spec of model ``name`` (default: the default model); raises ``ModelConfigError`` saying what is wrong."""
    at = where(config)
    try:
        specs = model_specs(config)
    except ConfigError as err:
        raise ModelConfigError(str(err)) from None
    if not specs:
        raise ModelConfigError(NO_MODEL.format(where=at))
    chosen = name or default_model_name(config)
    if chosen is None:
        raise ModelConfigError(
            f"{at}: several models are configured ({', '.join(sorted(specs))}) and none is the default; "
            "set models.default or pass a model name"
        )
    spec = specs.get(chosen)
    if spec is None:
        raise ModelConfigError(
            f"{at}: unknown model {chosen!r}; configured models: {', '.join(sorted(specs))}"
        )
    problem = spec.problem()
    if problem is not None:
        raise ModelConfigError(f"{at}: {problem}")
    return spec
