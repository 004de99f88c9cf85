"""The per-invocation state: the global options and the ``ToolSystem`` built lazily from them."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from ..config import Config
    from ..host import AskUser
    from ..system import ToolSystem

__all__ = ["CONFIG_EXIT", "ConfigFailure", "State", "current_system", "get_state"]

CONFIG_EXIT = 2


class ConfigFailure(click.ClickException):
    """A broken configuration file: the message names the file, line and key; exits with status 2."""

    exit_code = CONFIG_EXIT


@dataclass
class State:
    """The global options of one ``hermes`` invocation and the tool system they describe."""

    config: Path | None = None
    plugins_dir: Path | None = None
    blocked: tuple[str, ...] = ()
    workspace: Path | None = None
    approver: Any = None
    ask_user: AskUser | None = None
    verbose: bool = False
    plugin_commands: dict[str, click.Command] | None = None
    _system: ToolSystem | None = field(default=None, repr=False)

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> State:
        return cls(
            config=params.get("config"),
            plugins_dir=params.get("plugins_dir"),
            blocked=tuple(params.get("plugin") or ()),
            workspace=params.get("workspace"),
            verbose=bool(params.get("verbose")),
        )

    def config_path(self) -> Path:
        """The configuration file this invocation reads (``--config`` or the default one)."""
        if self.config is not None:
            return Path(self.config).expanduser()
        from ..paths import config_file

        return config_file()

    def plugins_folder(self) -> Path:
        """The drop-in folder this invocation scans (``--plugins-dir`` or the default one)."""
        if self.plugins_dir is not None:
            return Path(self.plugins_dir).expanduser()
        from ..paths import plugins_dir

        return plugins_dir()

    def load_config(self) -> Config:
        """Read and validate the configuration without loading any plugin; a broken file exits 2."""
        from ..config import ConfigError, load_config

        try:
            return load_config(self.config)
        except ConfigError as err:
            raise ConfigFailure(str(err)) from None

    @property
    def loaded(self) -> bool:
        return self._system is not None

    def system(self) -> ToolSystem:
        """The tool system of this invocation, built on first use and closed when the command ends."""
        if self._system is not None:
            return self._system
        from ..config import ConfigError
        from ..plugins import PluginLoadError
        from ..system import ToolSystem

        try:
            self._system = ToolSystem.load(
                plugins_dir=self.plugins_dir,
                config=self.config,
                blocked=self.blocked,
                workspace=self.workspace,
                approver=self.approver,
                ask_user=self.ask_user,
            )
        except ConfigError as err:
            raise ConfigFailure(str(err)) from None
        except PluginLoadError as err:
            raise click.ClickException(f"{err} (strict plugin loading is on)") from None
        if (
            not self._system.workspace.is_dir()
        ):  # from the config's [session] workspace (--workspace is checked)
            where = self._system.workspace
            self.close()
            raise ConfigFailure(
                f"{self.config_path()}: [session] workspace {where} is not an existing folder"
            )
        # a one-shot command wants MCP tools present: wait for background connections, bounded by
        # [mcp] ready_timeout, and name the servers it gave up on (no-op without MCP)
        _wait_for_mcp(self._system)
        return self._system

    def close(self) -> None:
        if self._system is not None:
            self._system.close()
            self._system = None


def _wait_for_mcp(system: ToolSystem) -> None:
    """Give configured servers up to ``[mcp] ready_timeout`` seconds to connect; name those it gave up on."""
    if not system.mcp_status():
        return
    from ..mcp import ClientSettings

    bound = ClientSettings.from_config(system.config).ready_timeout
    system.wait_mcp(bound)
    for name, info in system.mcp_status().items():
        state = info["state"]
        if state in ("ready", "disabled", "closed"):
            continue
        why = info.get("error") or "still connecting"
        if state == "failed":
            _warn(f"MCP server {name!r} is not used: {why}")
        else:
            _warn(
                f"gave up waiting for MCP server {name!r} after {bound:g} s ({why}); its tools are missing from "
                "this run (raise [mcp] ready_timeout to wait longer)"
            )


def _warn(message: str) -> None:
    print(f"hermes: warning: {message}", file=sys.stderr)


def parse_plugin_spec(spec: str) -> str:
    """``no:NAME`` -> ``NAME`` (the plugin to block); anything else is a usage error."""
    if not spec.startswith("no:") or not spec[3:].strip():
        raise click.BadParameter(f"expected no:NAME to block a plugin, got {spec!r}", param_hint="'-p'")
    return spec[3:].strip()


def get_state(ctx: click.Context | None = None) -> State:
    """The state of the running invocation, created from the root command's options on first use."""
    ctx = ctx if ctx is not None else click.get_current_context()
    root = ctx.find_root()
    if not isinstance(root.obj, State):
        root.obj = State.from_params(dict(root.params))
        root.call_on_close(root.obj.close)
        from ._logs import setup_logging

        setup_logging(root.obj.verbose)
    return root.obj


def current_system() -> ToolSystem:
    """The ``ToolSystem`` of the running ``hermes`` command; plugin commands call this to reach the tools."""
    return get_state().system()
