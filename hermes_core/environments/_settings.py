"""The ``[environment]`` configuration table: which kind runs a session's commands and files, and each kind's own
table.

```toml
[environment]
kind = "local"                # local (default) | container | ssh | a kind a plugin registers
[environment.container]       # the container kind (podman or Docker): engine, image, mounts, network, limits,
                              # user, whether the container persists after its session
[environment.ssh]             # the ssh kind: host, port, user, key or agent, known_hosts, remote workspace
[environment.my-kind]         # a plugin kind's own table, handed to it as EnvironmentSpec.settings
```

The ``local`` kind has no table of its own: it is the sandbox, configured by ``[sandbox]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from ..config import Config, ConfigError, resolve_secret

__all__ = ["DEFAULT_KIND", "RESERVED_KINDS", "EnvironmentSettings", "settings_from_config", "settings_kind"]

DEFAULT_KIND = "local"
# Built into hermes-tools (or reserved for it): a plugin cannot take these names.
RESERVED_KINDS = frozenset({"local", "container", "ssh"})


class EnvironmentSettings(NamedTuple):
    """What ``[environment]`` says: the ``kind`` and each kind's table (secrets resolved)."""

    kind: str = DEFAULT_KIND
    tables: Mapping[str, Mapping[str, Any]] = MappingProxyType({})

    def table(self, kind: str | None = None) -> Mapping[str, Any]:
        """The ``[environment.<kind>]`` table (default: the configured kind's), empty when absent."""
        return self.tables.get(kind or self.kind, {})


def settings_from_config(config: Config | None) -> EnvironmentSettings:
    """Read ``[environment]``; raises ``ConfigError`` for a kind name that is not a word."""
    raw = config.data.get("environment", {}) if config is not None else {}
    if not isinstance(raw, dict):
        raw = {}
    kind = raw.get("kind", DEFAULT_KIND)
    if not isinstance(kind, str) or not kind or not kind.replace("-", "").replace("_", "").isalnum():
        raise ConfigError(f"[environment] kind must be a name such as local, container or ssh, not {kind!r}")
    tables = {
        str(name): {str(k): resolve_secret(v) for k, v in section.items()}
        for name, section in raw.items()
        if isinstance(section, dict)
    }
    return EnvironmentSettings(kind=kind, tables=tables)


def settings_kind(host: Any) -> str:
    """The kind ``[environment]`` names for ``host`` ("?" when the table is broken)."""
    try:
        return settings_from_config(getattr(host, "config", None)).kind
    except ConfigError:
        return "?"
