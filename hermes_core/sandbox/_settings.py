"""The ``[sandbox]`` configuration table, read into ``SandboxSettings`` and per-call ``Limits``.

```toml
[sandbox]
backend = "auto"              # auto | bwrap | landlock | none
network = "on"                # on | off: the default for every tool
pass_env = ["MY_SETTING"]     # host environment variables passed through unchanged
env = { CI = "1" }            # set in every sandboxed command ({env = ...} / {file = ...} resolved)
read_only = ["~/datasets"]    # extra paths visible read-only
read_write = ["~/scratch"]    # extra paths visible read-write
home_toolchains = [".pyenv"]  # folders under $HOME shown read-only (replaces the default list)
[sandbox.limits]              # per call, for the whole process tree
memory_mb = 4096
max_processes = 512
cpu_seconds = 600
max_file_mb = 4096
[sandbox.tools.terminal]      # per-tool overrides
network = "off"
```
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ..config import Config, ConfigError, resolve_secret

__all__ = ["BACKENDS", "DEFAULT_TOOLCHAINS", "Limits", "SandboxSettings", "settings_from_config"]

BACKENDS = ("auto", "bwrap", "landlock", "none")

# Folders under $HOME that hold toolchains (interpreters, compilers, version managers) but no secrets.
DEFAULT_TOOLCHAINS: tuple[str, ...] = (
    ".pyenv",
    ".rbenv",
    ".nodenv",
    ".goenv",
    ".rustup",
    ".cargo/bin",
    ".nvm",
    ".volta",
    ".local/bin",
    ".deno/bin",
    ".bun/bin",
    ".sdkman/candidates",
    "go/bin",
)


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits of one sandboxed call; ``None`` means "no limit of this kind".

    ``memory_mb`` bounds each process's data size (and the whole tree when a cgroup is available),
    ``max_processes`` the processes alive at once in the tree, ``cpu_seconds`` the CPU time of each process
    (and of the whole tree with a cgroup), ``max_file_mb`` the size of any file written, and
    ``max_output_bytes`` the output kept from the call (its head and tail; the middle is counted, not kept).
    """

    memory_mb: int | None = None
    max_processes: int | None = None
    cpu_seconds: int | None = None
    max_file_mb: int | None = None
    max_output_bytes: int | None = None

    def merged(self, other: Limits | None) -> Limits:
        """These limits with every limit ``other`` sets taking its place."""
        if other is None:
            return self
        changes = {
            f.name: getattr(other, f.name) for f in fields(other) if getattr(other, f.name) is not None
        }
        return replace(self, **changes)


@dataclass(frozen=True, slots=True)
class SandboxSettings:
    """What the configuration says about sandboxing (defaults: strongest backend, network on)."""

    backend: str = "auto"
    network: bool = True
    tool_network: Mapping[str, bool] = field(default_factory=dict)
    pass_env: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    read_only: tuple[Path, ...] = ()
    read_write: tuple[Path, ...] = ()
    home_toolchains: tuple[str, ...] = DEFAULT_TOOLCHAINS
    limits: Limits = field(default_factory=Limits)

    def network_for(self, tool: str | None) -> bool:
        """Whether a call of ``tool`` may use the network."""
        if tool and tool in self.tool_network:
            return self.tool_network[tool]
        return self.network


def _network(value: Any, where: str) -> bool:
    if value in ("on", "off"):
        return bool(value == "on")
    raise ConfigError(f'[{where}] network must be "on" or "off", not {value!r}')


def _paths(values: Any) -> tuple[Path, ...]:
    return tuple(Path(v).expanduser() for v in values or ())


def _positive(section: Mapping[str, Any], key: str) -> int | None:
    value = section.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigError(f"[sandbox.limits] {key} must be a positive integer, not {value!r}")
    return value


def settings_from_config(config: Config | None) -> SandboxSettings:
    """Read ``[sandbox]``; raises ``ConfigError`` for values the type check lets through but that mean nothing."""
    raw = config.data.get("sandbox", {}) if config is not None else {}
    if not isinstance(raw, dict):
        raw = {}
    backend = raw.get("backend", "auto")
    if backend not in BACKENDS:
        raise ConfigError(f"[sandbox] backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    network = _network(raw.get("network", "on"), "sandbox")
    tool_network = {
        name: _network(section["network"], f"sandbox.tools.{name}")
        for name, section in (raw.get("tools") or {}).items()
        if isinstance(section, dict) and "network" in section
    }
    env: dict[str, str] = {}
    for name, value in (raw.get("env") or {}).items():
        resolved = resolve_secret(value)
        if resolved is None:
            continue  # {env = "UNSET"}: nothing to pass
        if not isinstance(resolved, str | int | float) or isinstance(resolved, bool):
            raise ConfigError(f"[sandbox] env.{name} must be a string (or {{env = ...}} / {{file = ...}})")
        env[str(name)] = str(resolved)
    section = raw.get("limits") or {}
    limits = Limits(
        memory_mb=_positive(section, "memory_mb"),
        max_processes=_positive(section, "max_processes"),
        cpu_seconds=_positive(section, "cpu_seconds"),
        max_file_mb=_positive(section, "max_file_mb"),
    )
    toolchains = raw.get("home_toolchains")
    return SandboxSettings(
        backend=backend,
        network=network,
        tool_network=tool_network,
        pass_env=tuple(raw.get("pass_env") or ()),
        env=env,
        read_only=_paths(raw.get("read_only")),
        read_write=_paths(raw.get("read_write")),
        home_toolchains=tuple(toolchains) if toolchains is not None else DEFAULT_TOOLCHAINS,
        limits=limits,
    )
