"""``[environment.ssh]``: which host, how hermes proves who it is, and how it knows the host is the right one.

```toml
[environment.ssh]
host = "build-box.example.org"
port = 22
user = "dev"
key = "~/.ssh/id_ed25519"        # a private key file (unencrypted, or unlocked by an agent), and/or
agent = true                     # the agent at $SSH_AUTH_SOCK (or a socket path)
known_hosts = "~/.ssh/known_hosts"   # required to exist: the host's key must be in it (no trust on first use)
workspace = "/home/dev/project"  # the remote workspace (default: the remote user's home)
read_write = ["/srv/scratch"]    # more remote folders the file tools may write (besides the workspace, /tmp)
python = "python3"               # the interpreter execute_code runs there
connect_timeout = 15
keepalive = 30                   # seconds between keep-alive probes of the connection
```
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._base import EnvironmentUnavailable

__all__ = ["SshSettings", "ssh_settings"]


@dataclass(frozen=True, slots=True)
class SshSettings:
    """The ``[environment.ssh]`` table, checked (see the module docstring)."""

    host: str = ""
    port: int = 22
    user: str = ""
    key: str = ""
    agent: bool | str = False
    known_hosts: str = "~/.ssh/known_hosts"
    workspace: str = ""
    read_write: tuple[str, ...] = ()
    python: str = "python3"
    connect_timeout: float = 15.0
    keepalive: float = 30.0

    @property
    def target(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"


def _bad(key: str, why: str) -> EnvironmentUnavailable:
    return EnvironmentUnavailable(f"[environment.ssh] {key} {why}")


def ssh_settings(table: Mapping[str, Any]) -> SshSettings:
    """Read ``[environment.ssh]``; ``EnvironmentUnavailable`` says which key is wrong and why."""
    defaults = SshSettings()
    known = set(SshSettings.__dataclass_fields__)
    unknown = sorted(set(table) - known)
    if unknown:
        raise _bad(", ".join(unknown), f"is not a setting (known: {', '.join(sorted(known))})")
    words = {}
    for key in ("host", "user", "key", "known_hosts", "workspace", "python"):
        value = table.get(key, getattr(defaults, key))
        if not isinstance(value, str):
            raise _bad(key, f"must be a string, not {value!r}")
        words[key] = value
    if not words["host"]:
        raise _bad("host", "is required (the remote host's name or address)")
    words["user"] = words["user"] or getpass.getuser()
    if words["workspace"] and not words["workspace"].startswith("/"):
        raise _bad("workspace", f"must be an absolute path on the remote host, not {words['workspace']!r}")
    numbers = {}
    for key in ("port", "connect_timeout", "keepalive"):
        value = table.get(key, getattr(defaults, key))
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise _bad(key, f"must be a positive number, not {value!r}")
        numbers[key] = value
    agent = table.get("agent", False)
    if not isinstance(agent, bool | str):
        raise _bad("agent", f"must be true, false or the agent's socket path, not {agent!r}")
    read_write = table.get("read_write", [])
    if not isinstance(read_write, list) or not all(
        isinstance(p, str) and p.startswith("/") for p in read_write
    ):
        raise _bad("read_write", "must be a list of absolute remote paths")
    if not words["key"] and not agent:
        raise _bad("key", "or agent is required: hermes authenticates with a key file or an SSH agent")
    return SshSettings(
        host=words["host"],
        port=int(numbers["port"]),
        user=words["user"],
        key=os.path.expanduser(words["key"]) if words["key"] else "",
        agent=agent,
        known_hosts=os.path.expanduser(words["known_hosts"]),
        workspace=words["workspace"].rstrip("/") or "",
        read_write=tuple(p.rstrip("/") or "/" for p in read_write),
        python=words["python"],
        connect_timeout=float(numbers["connect_timeout"]),
        keepalive=float(numbers["keepalive"]),
    )
