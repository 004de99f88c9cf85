"""The configuration file: one TOML document, validated strictly, with line numbers in every error.

```toml
[toolsets]
enabled = ["hermes-cli"]          # default: every tool ("all")
disabled = ["homeassistant"]
[toolsets.custom.research]        # composite toolsets of your own
tools = ["read_file"]
includes = ["web"]
[tools]
disabled = ["execute_code"]
check_ttl = 5.0                   # seconds a check_fn verdict is reused
override = { read_file = "myplugin" }   # let a plugin replace a built-in tool on purpose
[limits]
max_result_chars = 100000
timeout = 120.0
[limits.tools.terminal]           # per-tool overrides
timeout = 600
[plugins]
blocked = ["hermes-weather"]
on_failure = "refuse"             # a failed plugin: "refuse" every call, or "continue" without it (or a table
                                  # per plugin); by default "refuse" for plugins that declare pre_tool_call
[plugins.ratelimit]               # each plugin's own section, read with CallContext.plugin_config()
redis_url = { env = "RATELIMIT_REDIS_URL" }   # secrets may point at an env var or a file
[approvals]                       # see hermes_core.security: policy and the "always" allowlist
[sandbox]                         # the walls of local commands: see hermes_core.sandbox
backend = "auto"                  # auto | bwrap | landlock | none
network = "on"
[environment]                     # where a session's commands and files live: see hermes_core.environments
kind = "local"                    # local | container | ssh | a plugin's kind
[mcp.servers.files]
command = "mcp-server-files"
args = ["--root", "."]
[models.local]                    # chat models for the agent loop (see hermes_core.models)
base_url = "http://127.0.0.1:8080/v1"
[agent]                           # the agent loop of `hermes chat` / `hermes run` (see hermes_core.agent)
max_turns = 30
```
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Config", "ConfigError", "load_config", "resolve_secret", "update_config"]


class ConfigError(ValueError):
    """The configuration file is broken; the message names the file, line and key."""


_NUM = (int, float)
_LIST_OF_STR = "list[str]"
_ON_FAILURE = "on_failure"  # "refuse" | "continue", or a table of plugin names to one of them
ON_FAILURE_CHOICES = ("refuse", "continue")

# expected shape: a dict is a table with known keys; "*" lets any key through with the given shape.
_SHAPE: dict[str, Any] = {
    "toolsets": {
        "enabled": _LIST_OF_STR,
        "disabled": _LIST_OF_STR,
        "custom": {"*": {"tools": _LIST_OF_STR, "includes": _LIST_OF_STR, "description": str}},
    },
    "tools": {
        "disabled": _LIST_OF_STR,
        "check_ttl": _NUM,
        "check_timeout": _NUM,
        "override": {"*": str},
        "search": str,  # auto | on | off: defer tools behind tool_search past the budget
        "search_budget": int,  # tokens of definitions sent per turn when deferring
        "search_core": _LIST_OF_STR,  # toolsets or tools always sent
        "search_native": bool,  # Anthropic: its own defer_loading and tool search tool
        "search_ranker": (str, list),  # a ranker's name, or several fused
    },
    "limits": {
        "max_result_chars": int,
        "timeout": _NUM,
        "max_argument_chars": int,
        "max_parallel_calls": int,
        "tools": {"*": {"max_result_chars": int, "timeout": _NUM}},
    },
    "plugins": {
        "blocked": _LIST_OF_STR,
        "load": _LIST_OF_STR,
        "strict": bool,
        "on_failure": _ON_FAILURE,
        "*": dict,
    },
    "approvals": dict,
    "mcp": {
        "ready_timeout": _NUM,  # seconds a one-shot CLI command waits for servers to connect
        "max_backoff": _NUM,  # the longest wait between two reconnection attempts (default for every server)
        "servers": {
            "*": {
                "command": str,
                "args": _LIST_OF_STR,
                "env": dict,
                "cwd": str,
                "url": str,
                "headers": dict,
                "enabled": bool,
                "timeout": _NUM,
                "prefix": str,  # names of this server's tools: prefix + name (default: bare, "<server>_" on a clash)
                "max_backoff": _NUM,
                "max_call_time": _NUM,  # the longest one call may run, progress notifications included
                "approve": str,  # "destructive" (default), "all" or "none": which calls need approval
            }
        },
    },
    "session": {"workspace": str},
    "scheduler": {
        "in_process": bool,  # run the scheduler in hermes chat / mcp serve (unset: yes) and library hosts (no)
        "store": str,  # a URL (sqlite:///PATH, postgresql://...) or a path; default <data dir>/scheduler/jobs.db
        "catch_up": str,  # once | skip
        "grace": _NUM,
        "tick": _NUM,
        "lease": _NUM,
        "max_concurrent": int,
        "model": str,  # agent jobs' defaults
        "toolsets": _LIST_OF_STR,
        "max_turns": int,
        "deliver": (str, list),
        "jobs": {"*": dict},  # [scheduler.jobs.NAME]: schedule, prompt or tool/arguments, deliver...
    },
    "models": {
        "default": str,
        "*": {
            "provider": str,
            "model": str,
            "base_url": str,
            "api_key": (str, dict),
            "headers": dict,
            "timeout": _NUM,
            "max_retries": int,
            "max_retry_wait": _NUM,
            "max_tokens": int,
            "temperature": _NUM,
            "context_window": int,
            "stream": bool,
            "stream_usage": bool,  # ask an OpenAI-compatible stream for its token usage (default true)
            "keep_reasoning": bool,  # send a model's reasoning back within one task's tool loop (default true)
            "params": dict,
        },
    },
    "agent": {
        "toolsets": _LIST_OF_STR,
        "max_turns": int,
        "system_prompt": str,
        "starting_context_chars": int,  # the memory store and skills index in the system prompt (0: none)
    },
    "sandbox": {
        "backend": str,
        "network": (str, dict),
        "unix_sockets": bool,
        "host_run": _LIST_OF_STR,
        "pass_env": _LIST_OF_STR,
        "env": dict,
        "read_only": _LIST_OF_STR,
        "read_write": _LIST_OF_STR,
        "home_toolchains": _LIST_OF_STR,
        "limits": {
            "memory_mb": int,
            "max_processes": int,
            "cpu_seconds": int,
            "max_file_mb": int,
            "max_output_mb": int,
            "min_free_mb": int,
        },
        "tools": {"*": {"network": str}},
    },
    # where a session's commands and files live (see hermes_core.environments); each kind reads its own table
    "environment": {"kind": str, "container": dict, "ssh": dict, "*": dict},
}


def _type_name(shape: Any) -> str:
    if shape == _LIST_OF_STR:
        return "a list of strings"
    if shape == _ON_FAILURE:
        return '"refuse" or "continue", or a table of plugin names to one of them'
    if shape is _NUM:
        return "a number"
    if isinstance(shape, dict) or shape is dict:
        return "a table"
    if shape == (str, dict):
        return 'a string or a table such as { env = "VAR" }'
    if shape == (str, list):
        return "a string or a list of strings"
    return {str: "a string", int: "an integer", bool: "true or false"}.get(shape, str(shape))


def _line_of(text: str, dotted: list[str]) -> int | None:
    """Best-effort line number of a key (its last part) or of a table header naming the dotted path."""
    last = re.escape(dotted[-1])
    header = re.compile(r"^\s*\[\[?\s*" + r"\s*\.\s*".join(re.escape(p) for p in dotted) + r"\s*\]")
    key = re.compile(r"^\s*(?:\"?" + last + r"\"?)\s*=")
    for number, line in enumerate(text.splitlines(), 1):
        if header.match(line) or key.match(line):
            return number
    return None


def _matches(value: Any, shape: Any) -> bool:
    if shape == _LIST_OF_STR:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if shape == _ON_FAILURE:
        values = value.values() if isinstance(value, dict) else [value]
        return all(v in ON_FAILURE_CHOICES for v in values)
    if shape is _NUM:
        return isinstance(value, _NUM) and not isinstance(value, bool)
    if shape is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if shape is dict or isinstance(shape, dict):
        return isinstance(value, dict)
    return isinstance(value, shape)


def _validate(
    data: Mapping[str, Any], shape: Mapping[str, Any], path: list[str], text: str, where: str
) -> None:
    for key, value in data.items():
        sub = shape.get(key, shape.get("*"))
        dotted = [*path, key]
        line = _line_of(text, dotted)
        loc = f"{where}{f':{line}' if line else ''}: key '{'.'.join(dotted)}'"
        if sub is None:
            known = ", ".join(k for k in shape if k != "*")
            raise ConfigError(f"{loc} is not a known setting (known here: {known})")
        if not _matches(value, sub):
            raise ConfigError(f"{loc} must be {_type_name(sub)}, got {type(value).__name__}")
        if isinstance(sub, dict):
            _validate(value, sub, dotted, text, where)


@dataclass(slots=True)
class Config:
    """A validated configuration; ``data`` is the parsed TOML, the properties read it with defaults."""

    data: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None

    def _get(self, *keys: str, default: Any = None) -> Any:
        node: Any = self.data
        for key in keys:
            if not isinstance(node, dict) or key not in node:
                return default
            node = node[key]
        return node

    @property
    def enabled_toolsets(self) -> list[str] | None:
        value = self._get("toolsets", "enabled")
        return list(value) if value is not None else None

    @property
    def disabled_toolsets(self) -> list[str]:
        return list(self._get("toolsets", "disabled", default=[]))

    @property
    def disabled_tools(self) -> list[str]:
        return list(self._get("tools", "disabled", default=[]))

    @property
    def custom_toolsets(self) -> dict[str, dict[str, Any]]:
        return dict(self._get("toolsets", "custom", default={}))

    @property
    def tool_overrides(self) -> dict[str, str]:
        """``[tools] override``: tool name -> the plugin whose tool replaces the built-in of that name."""
        return dict(self._get("tools", "override", default={}))

    @property
    def check_ttl(self) -> float:
        return float(self._get("tools", "check_ttl", default=5.0))

    @property
    def check_timeout(self) -> float:
        return float(self._get("tools", "check_timeout", default=2.0))

    @property
    def blocked_plugins(self) -> list[str]:
        return list(self._get("plugins", "blocked", default=[]))

    @property
    def load_plugins(self) -> list[str] | None:
        value = self._get("plugins", "load")
        return list(value) if value is not None else None

    @property
    def strict_plugins(self) -> bool:
        return bool(self._get("plugins", "strict", default=False))

    @property
    def on_failure(self) -> dict[str, str]:
        """``[plugins] on_failure`` as ``{plugin: "refuse" | "continue"}``; the key ``"*"`` holds a plain value."""
        value = self._get("plugins", "on_failure", default={})
        return {"*": value} if isinstance(value, str) else dict(value)

    @property
    def max_result_chars(self) -> int:
        return int(self._get("limits", "max_result_chars", default=100_000))

    @property
    def timeout(self) -> float:
        return float(self._get("limits", "timeout", default=120.0))

    @property
    def max_argument_chars(self) -> int:
        return int(self._get("limits", "max_argument_chars", default=1_000_000))

    @property
    def max_parallel_calls(self) -> int:
        """How many parallel-safe calls of one ``call_many`` turn run at once (``[limits] max_parallel_calls``)."""
        return max(1, int(self._get("limits", "max_parallel_calls", default=32)))

    def tool_limits(self, name: str) -> dict[str, Any]:
        return dict(self._get("limits", "tools", name, default={}))

    @property
    def approvals(self) -> dict[str, Any]:
        return dict(self._get("approvals", default={}))

    @property
    def mcp_servers(self) -> dict[str, dict[str, Any]]:
        return dict(self._get("mcp", "servers", default={}))

    @property
    def workspace(self) -> str | None:
        value = self._get("session", "workspace")
        return str(value) if value is not None else None

    def plugin_section(self, name: str) -> dict[str, Any]:
        """The ``[plugins.<name>]`` table with ``{env = ...}``/``{file = ...}`` values resolved."""
        section = self._get("plugins", name, default={})
        if not isinstance(section, dict):
            return {}
        return {k: resolve_secret(v) for k, v in section.items()}


def resolve_secret(value: Any) -> Any:
    """Turn ``{env = "NAME"}`` into that variable's value and ``{file = "path"}`` into the file's text."""
    if isinstance(value, dict):
        if set(value) == {"env"} and isinstance(value["env"], str):
            return os.environ.get(value["env"])
        if set(value) == {"file"} and isinstance(value["file"], str):
            try:
                return Path(value["file"]).expanduser().read_text("utf-8").strip()
            except OSError:
                return None
        return {k: resolve_secret(v) for k, v in value.items()}
    return value


def parse_config(text: str, where: str = "<config>") -> Config:
    """Parse and validate TOML text; raises ``ConfigError`` naming the line and key."""
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{where}: invalid TOML: {err}") from None
    _validate(data, _SHAPE, [], text, where)
    return Config(data=data)


def load_config(source: str | os.PathLike[str] | Mapping[str, Any] | Config | None = None) -> Config:
    """Load the configuration: a path, a dict (validated the same way), a Config, or None for the default file.

    A missing default file means defaults; a missing named file, bad TOML, an unknown key or a wrong type
    raises ``ConfigError``. It never falls back to defaults silently.
    """
    if isinstance(source, Config):
        return source
    if isinstance(source, Mapping):
        _validate(source, _SHAPE, [], "", "<config dict>")
        return Config(data=dict(source))
    if source is None:
        from .paths import config_file

        path = config_file()
        if not path.exists():
            return Config(path=path)
    else:
        path = Path(source).expanduser()
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: configuration file not found") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: cannot read configuration: {err}") from None
    config = parse_config(text, str(path))
    config.path = path
    return config


def update_config(path: str | os.PathLike[str], mutate: Callable[[Any], None]) -> Config:
    """Edit the TOML file at ``path`` in place, keeping the user's comments and formatting.

    ``mutate`` receives the tomlkit document (a dict-like) and changes it. The result is validated like any
    configuration before it replaces the file, atomically (temporary file + ``os.replace``), so a reader
    never sees half a file and a bad edit leaves the old file untouched (``ConfigError``). A missing file
    is created. Concurrent writers are serialised with a lock file where the platform has ``fcntl``.
    """
    import tomlkit

    from .fileio import atomic_write

    target = Path(path).expanduser()
    target.parent.mkdir(parents=True, exist_ok=True)
    with _write_lock(target):
        try:
            text = target.read_text("utf-8")
        except FileNotFoundError:
            text = ""
        try:
            document = tomlkit.parse(text)
        except Exception as err:  # tomlkit's parse errors carry the line and column
            raise ConfigError(f"{target}: invalid TOML: {err}") from None
        mutate(document)
        new_text = tomlkit.dumps(document)
        config = parse_config(new_text, str(target))
        atomic_write(target, new_text)  # keeps the file's permission bits
    config.path = target
    return config


@contextlib.contextmanager
def _write_lock(target: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # no advisory locks on this platform: atomic replace still protects readers
        yield
        return
    with open(target.with_name(f".{target.name}.lock"), "a+") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
