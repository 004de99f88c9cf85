"""Chat model clients over httpx: OpenAI-compatible Chat Completions and Anthropic Messages (a public module).

Models are named in the ``[models]`` table of the configuration (see ``hermes_core.models._config`` for every
key); ``get_model(system)`` gives the default one, ``get_model(system, "name")`` another. Clients share one
connection pool per tool system and are closed with it.

```python
from hermes_core.models import get_model

model = get_model(system)                      # the configured default
reply = model.complete([{"role": "user", "content": "hi"}], system.definitions(format=model.tool_format),
                       on_text=lambda piece: print(piece, end=""))
reply.text, reply.tool_calls, reply.stop_reason, reply.usage
```

Requests that fail with 429, 5xx, a timeout or a dropped connection are retried with exponential backoff
(``max_retries``, honouring ``retry-after`` up to ``max_retry_wait``) as long as nothing of the answer reached
the caller yet (a stream that breaks before its first token is retried too); then a ``ModelError`` says what
went wrong, with ``kind="context_length"`` when the server said, in its own words, that the conversation is too
long. A reply keeps what the provider meant: ``stop_reason`` ``refusal``, ``length`` and ``content_filter`` of
their own, Anthropic thinking blocks and compatible servers' reasoning to send back, and the usage of the
request (OpenAI-compatible streams are asked for it). Cancelling the ``CancelToken`` passed as ``cancel`` stops
a streamed answer at once (its socket is shut), also one the server went silent on; ``Agent`` also stops waiting
for a request whose answer has not begun.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._problem import no_model

if TYPE_CHECKING:
    import httpx

    from ..config import Config
    from ..host import Host
    from ._anthropic import AnthropicClient
    from ._config import (
        PROVIDERS,
        ModelConfigError,
        ModelSpec,
        default_model_name,
        model_specs,
    )
    from ._openai import OpenAIChatClient
    from ._types import (
        CancelToken,
        ModelClient,
        ModelError,
        ModelReply,
        RetryCallback,
        TextCallback,
        ToolCall,
        Usage,
    )

_TYPES = frozenset(
    (
        "CancelToken",
        "ModelClient",
        "ModelError",
        "ModelReply",
        "RetryCallback",
        "TextCallback",
        "ToolCall",
        "Usage",
    )
)

__all__ = [
    "PROVIDERS",
    "AnthropicClient",
    "CancelToken",
    "ModelClient",
    "ModelConfigError",
    "ModelError",
    "ModelReply",
    "ModelSpec",
    "OpenAIChatClient",
    "RetryCallback",
    "TextCallback",
    "ToolCall",
    "Usage",
    "default_model_name",
    "get_model",
    "make_client",
    "model_names",
    "model_problem",
    "model_specs",
]


_CONFIG = frozenset(
    ("PROVIDERS", "ModelConfigError", "ModelSpec", "default_model_name", "model_specs", "resolve_spec")
)


def __getattr__(name: str) -> Any:
    # the wire clients (and the HTTP machinery under them), the reply types and even the model specs load on
    # first use: a check that only asks whether a model is configured, on every start, must not pay for them
    if name in _CONFIG:
        from . import _config

        value = getattr(_config, name)
        globals()[name] = value
        return value
    if name in _TYPES:
        from . import _types

        value = getattr(_types, name)
        globals()[name] = value
        return value
    if name == "AnthropicClient":
        from ._anthropic import AnthropicClient

        return AnthropicClient
    if name == "OpenAIChatClient":
        from ._openai import OpenAIChatClient

        return OpenAIChatClient
    raise AttributeError(f"module 'hermes_core.models' has no attribute {name!r}")


def model_problem(config: Config, name: str | None = None) -> str | None:
    """Why model ``name`` (default: the default model) cannot be used, or None when it can."""
    none_at_all = no_model(config)  # the usual case, asked by checks at every start: no specs loaded for it
    if none_at_all is not None:
        return none_at_all
    from ._config import ModelConfigError, resolve_spec

    try:
        resolve_spec(config, name)
    except ModelConfigError as err:
        return str(err)
    return None


def make_client(spec: ModelSpec, http: httpx.Client | None = None) -> ModelClient:
    """A client for ``spec``; without ``http`` it gets a connection pool of its own (close it when done)."""
    from ._anthropic import AnthropicClient
    from ._openai import OpenAIChatClient

    if http is None:
        import httpx

        http = httpx.Client()
    if spec.provider == "anthropic":
        return AnthropicClient(spec, http)
    return OpenAIChatClient(spec, http)


def _pool() -> httpx.Client:
    import httpx

    return httpx.Client(
        limits=httpx.Limits(max_connections=32, max_keepalive_connections=8), follow_redirects=False
    )


def get_model(system: Host, name: str | None = None) -> ModelClient:
    """The client of configured model ``name`` (default: the default model), made once per system.

    Raises ``ModelConfigError`` (a ``ConfigError``) naming the problem: no model configured, unknown name,
    an api_key whose environment variable is unset.
    """
    # every Agent asks (a sub-agent, each task of a job runner): resolving the [models] table again each time
    # costs more than the rest of making an agent, and a system's configuration does not change
    known: dict[str | None, ModelClient] = system.stash("models.by_name", dict, cleanup=lambda _d: None)
    client = known.get(name)
    if client is None:
        from ._config import resolve_spec

        spec = resolve_spec(system.config, name)
        http = system.stash("models.http", _pool)
        client = system.stash(
            f"models.client.{spec.name}", lambda: make_client(spec, http), cleanup=lambda _c: None
        )
        known[name] = client
    return client


def model_names(system: Host) -> list[str]:
    """The names of the configured models (empty when there is no ``[models]`` table)."""
    from ._config import model_specs

    return sorted(model_specs(system.config))
