"""``[environment.container]``: which engine, which image, what the container sees and what bounds it.

```toml
[environment.container]
engine = "auto"            # auto (podman, else docker) | podman | docker | a path to either CLI
image = "localhost/dev:latest"
pull = "missing"           # missing | never | always (what the engine does when the image is not here)
scope = "session"          # session: one container per session | workspace: one per workspace, shared
persist = false            # true: keep the container when the session ends (and reuse it next time)
workdir = "/workspace"     # where the workspace is bind-mounted (commands and relative paths start there)
mounts = ["/srv/data:/data:ro"]   # more bind mounts, HOST:CONTAINER[:ro]
network = "none"           # none | proxy (podman: the sandbox's proxy, [sandbox.network]) | host | bridge
memory_mb = 2048           # the container's memory limit (--memory)
cpus = 2.0                 # --cpus
pids_limit = 1024          # --pids-limit (processes and threads at once)
user = "1000:1000"         # --user (default: the image's)
env = { LANG = "C.UTF-8" }
python = "python3"         # the interpreter execute_code runs there
init = true                # --init: an init reaps zombies in the long-lived container
run_args = []              # more arguments for `run`, verbatim (the operator's own choice)
```
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ._base import EnvironmentUnavailable

__all__ = ["ContainerSettings", "Mount", "container_settings", "find_engine"]

_NETWORKS = ("none", "proxy", "host", "bridge")


@dataclass(frozen=True, slots=True)
class Mount:
    """A bind mount: ``host`` shown at ``path`` in the container."""

    host: str
    path: str
    read_only: bool = False


@dataclass(frozen=True, slots=True)
class ContainerSettings:
    """The ``[environment.container]`` table, checked (see the module docstring)."""

    image: str = ""
    engine: str = "auto"
    pull: str = "missing"
    scope: str = "session"
    persist: bool = False
    workdir: str = "/workspace"
    mounts: tuple[Mount, ...] = ()
    network: str = "none"
    memory_mb: int | None = None
    cpus: float | None = None
    pids_limit: int | None = 1024
    user: str = ""
    env: Mapping[str, str] = field(default_factory=dict)
    python: str = "python3"
    init: bool = True
    run_args: tuple[str, ...] = ()

    def digest(self, workspace: str) -> str:
        """A digest of everything the container is made from: a kept container made otherwise is replaced."""
        data = asdict(self)
        data["workspace"] = workspace
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _bad(key: str, why: str) -> EnvironmentUnavailable:
    return EnvironmentUnavailable(f"[environment.container] {key} {why}")


def _positive(table: Mapping[str, Any], key: str, kind: type = int) -> Any:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise _bad(key, f"must be a positive number, not {value!r}")
    if kind is int and not isinstance(value, int):
        raise _bad(key, f"must be a whole number, not {value!r}")
    return kind(value)


def _mount(text: Any) -> Mount:
    if not isinstance(text, str) or text.count(":") not in (1, 2):
        raise _bad("mounts", f"entries are HOST:CONTAINER or HOST:CONTAINER:ro, not {text!r}")
    host, path, *rest = text.split(":")
    if not host.startswith("/") or not path.startswith("/"):
        raise _bad("mounts", f"needs absolute paths on both sides: {text!r}")
    if rest and rest[0] not in ("ro", "rw"):
        raise _bad("mounts", f"options are ro or rw: {text!r}")
    return Mount(os.path.realpath(host), os.path.normpath(path), bool(rest and rest[0] == "ro"))


def container_settings(table: Mapping[str, Any]) -> ContainerSettings:
    """Read ``[environment.container]``; ``EnvironmentUnavailable`` says which key is wrong and why."""
    defaults = ContainerSettings()
    known = set(ContainerSettings.__dataclass_fields__)
    unknown = sorted(set(table) - known)
    if unknown:
        raise _bad(", ".join(unknown), f"is not a setting (known: {', '.join(sorted(known))})")
    words: dict[str, Any] = {}
    for key in ("image", "engine", "pull", "scope", "workdir", "network", "user", "python"):
        value = table.get(key, getattr(defaults, key))
        if not isinstance(value, str):
            raise _bad(key, f"must be a string, not {value!r}")
        words[key] = value
    if words["pull"] not in ("missing", "never", "always"):
        raise _bad("pull", f"must be missing, never or always, not {words['pull']!r}")
    if words["scope"] not in ("session", "workspace"):
        raise _bad("scope", f"must be session or workspace, not {words['scope']!r}")
    if words["network"] not in _NETWORKS:
        raise _bad("network", f"must be one of {', '.join(_NETWORKS)}, not {words['network']!r}")
    if not words["workdir"].startswith("/") or words["workdir"] == "/":
        raise _bad("workdir", f"must be an absolute folder other than /, not {words['workdir']!r}")
    for key in ("persist", "init"):
        if not isinstance(table.get(key, False), bool):
            raise _bad(key, f"must be true or false, not {table.get(key)!r}")
    env = table.get("env", {})
    if not isinstance(env, Mapping) or not all(
        isinstance(k, str) and k.isidentifier() and isinstance(v, str) for k, v in env.items()
    ):
        raise _bad("env", 'must be a table of NAME = "value" strings')
    mounts = table.get("mounts", [])
    run_args = table.get("run_args", [])
    if not isinstance(mounts, list):
        raise _bad("mounts", "must be a list")
    if not isinstance(run_args, list) or not all(isinstance(a, str) for a in run_args):
        raise _bad("run_args", "must be a list of strings")
    return ContainerSettings(
        **words,
        persist=bool(table.get("persist", False)),
        init=bool(table.get("init", True)),
        mounts=tuple(_mount(m) for m in mounts),
        memory_mb=_positive(table, "memory_mb"),
        cpus=_positive(table, "cpus", float),
        pids_limit=_positive(table, "pids_limit") if "pids_limit" in table else defaults.pids_limit,
        env=dict(env),
        run_args=tuple(run_args),
    )


def find_engine(name: str) -> tuple[str, str] | None:
    """``(path of the CLI, "podman" or "docker")`` for ``engine = name``, or None when it is not installed."""
    candidates = ["podman", "docker"] if name == "auto" else [name]
    for candidate in candidates:
        path = candidate if candidate.startswith("/") else shutil.which(candidate)
        if path and os.access(path, os.X_OK):
            flavour = "docker" if "docker" in os.path.basename(path) else "podman"
            return path, flavour
    return None
