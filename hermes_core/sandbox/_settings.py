"""The ``[sandbox]`` configuration table, read into ``SandboxSettings`` and per-call ``Limits``.

```toml
[sandbox]
backend = "auto"              # auto | bwrap | landlock | none
network = "on"                # on (through hermes's proxy) | off | host (the host's network: no walls)
unix_sockets = false          # true: commands may make AF_UNIX sockets (socketpair always works)
host_run = [".git/config", ...]   # files the host runs later: read-only inside (replaces the default list)
pass_env = ["MY_SETTING"]     # host environment variables passed through unchanged
env = { CI = "1" }            # set in every sandboxed command ({env = ...} / {file = ...} resolved)
read_only = ["~/datasets"]    # extra paths visible read-only
read_write = ["~/scratch"]    # extra paths visible read-write
home_toolchains = [".pyenv"]  # folders under $HOME shown read-only (replaces the default list)
[sandbox.limits]              # per call, for the whole process tree (these are the defaults)
memory_mb = 4096
max_processes = 512
cpu_seconds = 3600
max_file_mb = 2048
max_output_mb = 1
min_free_mb = 512             # a call is ended when the workspace's disk gets below this much free space
[sandbox.network]             # instead of `network = "on"`: the mode and what "on" reaches through the proxy
mode = "on"
allow = ["example.org", "*.example.com"]   # besides the package registries
registries = true             # DEFAULT_REGISTRIES (PyPI, npm, crates.io, Go, RubyGems, Maven Central)
ask = true                    # a name not listed asks for approval (headless: refused)
allow_networks = []           # private, loopback... networks the proxy may reach anyway (as [plugins.web])
resolve = {}                  # pinned names: { "pypi.internal" = "10.0.0.5" }
[sandbox.tools.terminal]      # per-tool overrides
network = "off"
```
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ..config import Config, ConfigError, resolve_secret

__all__ = [
    "BACKENDS",
    "DEFAULT_HOST_RUN",
    "DEFAULT_LIMITS",
    "DEFAULT_REGISTRIES",
    "DEFAULT_TOOLCHAINS",
    "NETWORK_MODES",
    "EgressSettings",
    "Limits",
    "SandboxSettings",
    "settings_from_config",
]

BACKENDS = ("auto", "bwrap", "landlock", "none")
NETWORK_MODES = ("on", "off", "host")

# Package registries a sandboxed command may reach through the proxy unless [sandbox.network] registries = false.
DEFAULT_REGISTRIES: tuple[str, ...] = (
    "pypi.org",
    "files.pythonhosted.org",
    "registry.npmjs.org",
    "registry.yarnpkg.com",
    "crates.io",
    "index.crates.io",
    "static.crates.io",
    "proxy.golang.org",
    "sum.golang.org",
    "rubygems.org",
    "index.rubygems.org",
    "repo.maven.apache.org",
    "repo1.maven.org",
)

# Files the host runs (or lets configure what it runs) later, outside every wall: read-only inside the sandbox,
# and the file tools ask before writing them. Paths relative to each writable root; "*" matches one name.
DEFAULT_HOST_RUN: tuple[str, ...] = (
    ".git/config",
    ".git/hooks",
    ".git/info",
    ".git/modules/*/config",
    ".git/modules/*/hooks",
    ".git/modules/*/info",
    ".envrc",
    ".vscode/tasks.json",
    ".vscode/settings.json",
    ".vscode/launch.json",
    ".idea",
    "*/lib/python*/site-packages/*.pth",
    "*/lib/python*/site-packages/sitecustomize.py",
    "*/lib/python*/site-packages/usercustomize.py",
)

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
    min_free_mb: int | None = None

    def merged(self, other: Limits | None) -> Limits:
        """These limits with every limit ``other`` sets taking its place."""
        if other is None:
            return self
        changes = {
            f.name: getattr(other, f.name) for f in fields(other) if getattr(other, f.name) is not None
        }
        return replace(self, **changes)


# What bounds a call when the configuration says nothing (each can be raised, lowered, or set per call).
DEFAULT_LIMITS = Limits(
    memory_mb=4096,
    max_processes=512,
    cpu_seconds=3600,
    max_file_mb=2048,
    max_output_bytes=1_000_000,
    min_free_mb=512,
)


@dataclass(frozen=True, slots=True)
class EgressSettings:
    """``[sandbox.network]``: which names the proxy lets a sandboxed command reach, and the SSRF exceptions."""

    allow: tuple[str, ...] = ()
    registries: bool = True
    ask: bool = True
    policy: Mapping[str, Any] = field(
        default_factory=dict
    )  # allow_networks / resolve, as NetworkPolicy reads

    def names(self) -> tuple[str, ...]:
        """Every allowed name pattern (the registries first when they are on)."""
        return (*(DEFAULT_REGISTRIES if self.registries else ()), *self.allow)


@dataclass(frozen=True, slots=True)
class SandboxSettings:
    """What the configuration says about sandboxing (defaults: strongest backend, network through the proxy)."""

    backend: str = "auto"
    network: str = "on"
    tool_network: Mapping[str, str] = field(default_factory=dict)
    pass_env: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    read_only: tuple[Path, ...] = ()
    read_write: tuple[Path, ...] = ()
    home_toolchains: tuple[str, ...] = DEFAULT_TOOLCHAINS
    limits: Limits = DEFAULT_LIMITS
    egress: EgressSettings = field(default_factory=EgressSettings)
    unix_sockets: bool = False
    host_run: tuple[str, ...] = DEFAULT_HOST_RUN

    def network_for(self, tool: str | None) -> str:
        """The network mode of a call of ``tool``: "on", "off" or "host"."""
        if tool and tool in self.tool_network:
            return self.tool_network[tool]
        return self.network


def _network(value: Any, where: str) -> str:
    if value in NETWORK_MODES:
        return str(value)
    raise ConfigError(f'[{where}] network must be "on", "off" or "host", not {value!r}')


_HOST_PATTERN = re.compile(r"^(\*\.)?[a-z0-9_-]+(\.[a-z0-9_-]+)*$|^\[?[0-9a-f:.]+\]?$")


def _egress(raw: Any) -> EgressSettings:
    section = raw if isinstance(raw, dict) else {}
    allow = section.get("allow") or []
    if not isinstance(allow, list):
        raise ConfigError("[sandbox.network] allow must be a list of host names")
    for name in allow:
        if not isinstance(name, str) or not _HOST_PATTERN.match(name.strip().lower().rstrip(".")):
            raise ConfigError(
                f"[sandbox.network] allow: {name!r} is not a host name, *.domain pattern or IP address"
            )
    from ..security import NetworkPolicy

    policy = {k: section[k] for k in ("allow_networks", "resolve") if k in section}
    try:
        NetworkPolicy.from_config(policy)
    except ValueError as err:
        raise ConfigError(f"[sandbox.network] {err}") from None
    return EgressSettings(
        allow=tuple(str(a).strip().lower().rstrip(".") for a in allow),
        registries=bool(section.get("registries", True)),
        ask=bool(section.get("ask", True)),
        policy=policy,
    )


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
    net_raw = raw.get("network", "on")
    # `network = "off"` (a mode), or a [sandbox.network] table with `mode` and the proxy's settings
    net_table = net_raw if isinstance(net_raw, dict) else {}
    where = "sandbox.network" if net_table else "sandbox"
    network = _network(net_table.get("mode", "on") if net_table else net_raw, where)
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
    output_mb = _positive(section, "max_output_mb")
    limits = DEFAULT_LIMITS.merged(
        Limits(
            memory_mb=_positive(section, "memory_mb"),
            max_processes=_positive(section, "max_processes"),
            cpu_seconds=_positive(section, "cpu_seconds"),
            max_file_mb=_positive(section, "max_file_mb"),
            max_output_bytes=output_mb * 1_000_000 if output_mb else None,
            min_free_mb=_positive(section, "min_free_mb"),
        )
    )
    toolchains = raw.get("home_toolchains")
    host_run = raw.get("host_run")
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
        egress=_egress(net_table),
        unix_sockets=bool(raw.get("unix_sockets", False)),
        host_run=tuple(host_run) if host_run is not None else DEFAULT_HOST_RUN,
    )
