"""``hermes config path`` and ``hermes config show``: where the file is and what it says, secrets masked."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import click

from ._output import emit_json
from ._state import get_state

if TYPE_CHECKING:
    from ..config import Config

__all__ = ["MASK", "config_group", "effective_settings", "redact_settings"]

MASK = "********"
_SECRET_KEY = re.compile(r"token|secret|password|passwd|key|auth|credential|cookie", re.IGNORECASE)


def _text_redactor() -> Callable[[str], str]:
    """``hermes_core.security.redact`` when available, else the identity (key-name masking still applies)."""
    import importlib

    try:
        redact = getattr(importlib.import_module("hermes_core.security"), "redact", None)
    except ImportError:
        redact = None
    if not callable(redact):
        return lambda text: text
    return cast("Callable[[str], str]", redact)


def _is_reference(value: Any) -> bool:
    """``{env = "NAME"}`` and ``{file = "path"}`` point at a secret; they are not one."""
    return isinstance(value, dict) and len(value) == 1 and set(value) <= {"env", "file"}


def redact_settings(data: Any, redact: Callable[[str], str] | None = None, *, secret: bool = False) -> Any:
    """A copy of ``data`` with values under secret-looking keys masked and secret-looking text redacted."""
    redact = redact if redact is not None else _text_redactor()
    if _is_reference(data):
        return dict(data)
    if isinstance(data, dict):
        return {
            k: redact_settings(v, redact, secret=secret or bool(_SECRET_KEY.search(str(k))))
            for k, v in data.items()
        }
    if isinstance(data, list):
        return [redact_settings(v, redact, secret=secret) for v in data]
    if secret:
        return MASK
    if isinstance(data, str):
        return redact(data)
    return data


def effective_settings(config: Config) -> dict[str, Any]:
    """The file's settings with the defaults of every general setting filled in."""
    data: dict[str, Any] = {k: dict(v) if isinstance(v, dict) else v for k, v in config.data.items()}

    def put(section: str, key: str, value: Any) -> None:
        table = data.setdefault(section, {})
        if isinstance(table, dict):
            table.setdefault(key, value)

    put("toolsets", "enabled", config.enabled_toolsets or ["all"])
    put("toolsets", "disabled", config.disabled_toolsets)
    put("tools", "disabled", config.disabled_tools)
    put("tools", "check_ttl", config.check_ttl)
    put("tools", "check_timeout", config.check_timeout)
    put("limits", "max_result_chars", config.max_result_chars)
    put("limits", "timeout", config.timeout)
    put("limits", "max_argument_chars", config.max_argument_chars)
    put("plugins", "blocked", config.blocked_plugins)
    put("plugins", "strict", config.strict_plugins)
    data.setdefault("approvals", config.approvals)
    return data


@click.group("config")
def config_group() -> None:
    """The configuration file."""


@config_group.command("path")
def path_command() -> None:
    """Print the path of the configuration file (it may not exist yet).

    The other places hermes uses (the drop-in plugin folder, data, cache and the log file) follow on stderr, so
    the one line on stdout stays easy to use in scripts.
    """
    from .. import paths

    state = get_state()
    click.echo(str(state.config_path()))
    click.echo(f"# drop-in plugin folder: {state.plugins_folder()}", err=True)
    click.echo(f"# data: {paths.data_dir()}", err=True)
    click.echo(f"# cache: {paths.cache_dir()}", err=True)
    click.echo(f"# log: {paths.log_file()}", err=True)


@config_group.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print the settings as JSON.")
@click.option("--raw", is_flag=True, help="Only what the file says, without the defaults.")
def show_command(as_json: bool, raw: bool) -> None:
    """Print the effective configuration (file plus defaults), secrets masked.

    A broken file is an error (exit status 2) naming the line and the key; nothing falls back to defaults.
    """
    state = get_state()
    config = state.load_config()
    settings = redact_settings(dict(config.data) if raw else effective_settings(config))
    path = config.path if config.path is not None else state.config_path()
    if as_json:
        emit_json({"path": str(path), "exists": path.exists(), "settings": settings})
        return
    import tomlkit

    note = "" if path.exists() else " (does not exist: defaults)"
    click.echo(f"# {path}{note}")
    click.echo(tomlkit.dumps(settings).rstrip())


def _set_dotted(document: Any, dotted: str, value: Any) -> None:
    import tomlkit

    parts = [p.strip() for p in dotted.split(".")]
    if not all(parts):
        raise click.BadParameter(f"invalid key {dotted!r}", param_hint="KEY")
    node = document
    for part in parts[:-1]:
        if part not in node:
            node[part] = tomlkit.table()
        node = node[part]
        if not isinstance(node, dict):
            raise click.BadParameter(f"{dotted!r}: {part!r} is not a table", param_hint="KEY")
    node[parts[-1]] = value


@config_group.command("set")
@click.argument("key")
@click.argument("value")
def set_command(key: str, value: str) -> None:
    """Set KEY (dotted: limits.timeout) to VALUE (JSON when it parses: 60, true, ["a"]; else a string).

    The file keeps its comments and formatting; the change is validated first and written atomically.
    """
    import json

    from ..config import ConfigError, update_config

    try:
        parsed: Any = json.loads(value)
    except ValueError:
        parsed = value
    path = get_state().config_path()
    try:
        update_config(path, lambda document: _set_dotted(document, key, parsed))
    except ConfigError as err:
        raise click.ClickException(f"not changed: {err}") from None
    click.echo(f"{key} = {json.dumps(parsed)} in {path}", err=True)
