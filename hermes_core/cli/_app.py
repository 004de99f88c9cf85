"""The ``hermes`` group: global options, and the commands plugins add through ``register_commands``."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import click

from .. import __version__
from .._trace import trace
from ._state import ConfigFailure, State, get_state, parse_plugin_spec

__all__ = ["INTERRUPTED", "HermesGroup", "cli", "collect_plugin_commands"]

INTERRUPTED = 130  # the exit status of a command stopped by Ctrl-C (128 + SIGINT), as shells report it


def _warn(message: str) -> None:
    print(f"hermes: warning: {message}", file=sys.stderr)


def collect_plugin_commands(state: State, builtin: set[str]) -> dict[str, click.Command]:
    """Run every plugin's ``register_commands`` hook against a fresh group and return what they added.

    Each hook runs on its own: one that raises is reported on stderr and its partial additions dropped.
    A plugin command may not replace a built-in one.
    """
    system = state.system()
    collector = click.Group("hermes")
    owners: dict[str, str] = {}
    before: dict[str, click.Command] = {}

    @contextlib.contextmanager
    def snapshot(plugin: str) -> Iterator[None]:
        before.clear()
        before.update(collector.commands)
        yield

    for step in system.plugins.hooks.each("register_commands", {"cli": collector}, around=snapshot):
        if step.error is not None:
            err = step.error
            _warn(
                f"plugin {step.plugin_name!r}: register_commands failed ({type(err).__name__}: {err}); its commands are skipped"
            )
            collector.commands = dict(before)
            continue
        added = sorted(set(collector.commands) - set(before))
        for name in added:
            owners[name] = step.plugin_name
        if system.plugins.hooks.trace:
            trace(f"register_commands {step.plugin_name} -> added {added}")
    commands: dict[str, click.Command] = {}
    for name, command in collector.commands.items():
        if name in builtin:
            _warn(
                f"plugin {owners.get(name, '?')!r} adds a command {name!r} that clashes with a built-in; ignored"
            )
            continue
        commands[name] = command
    return commands


class HermesGroup(click.Group):
    """A click group that also offers the commands plugins register (loaded once, only when needed)."""

    def _plugin_commands(self, ctx: click.Context, *, quiet: bool) -> dict[str, click.Command]:
        state = get_state(ctx)
        if state.plugin_commands is None:
            try:
                state.plugin_commands = collect_plugin_commands(state, set(self.commands))
            except ConfigFailure as err:
                if not quiet:
                    raise
                _warn(f"plugin commands are not available: {err.format_message()}")
                state.plugin_commands = {}
            except Exception as err:  # a broken plugin system must never break the built-in commands
                _warn(f"plugin commands are not available: {type(err).__name__}: {err}")
                state.plugin_commands = {}
        return state.plugin_commands

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            return command
        return self._plugin_commands(ctx, quiet=False).get(cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        from ..selection import ToolsetError

        try:
            return super().invoke(ctx)
        except ToolsetError as err:  # the configuration selects a toolset nobody provides
            where = get_state(ctx).config_path()
            raise ConfigFailure(f"{where}: [toolsets]: {err}") from None

    def main(  # type: ignore[override]  # one signature for both of click's overloads
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the command line; Ctrl-C (or EOF at a prompt click asks) ends it with status 130, anywhere."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            result = super().main(args, prog_name, complete_var, False, **extra)
        except click.exceptions.Abort:  # click turns KeyboardInterrupt and EOFError into Abort
            print("hermes: interrupted", file=sys.stderr)
            sys.exit(INTERRUPTED)
        except KeyboardInterrupt:  # one that came while the command was closing
            print("\nhermes: interrupted", file=sys.stderr)
            sys.exit(INTERRUPTED)
        except click.ClickException as err:
            err.show()
            sys.exit(err.exit_code)
        sys.exit(result if isinstance(result, int) else 0)

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(super().list_commands(ctx))
        names.update(self._plugin_commands(ctx, quiet=True))
        return sorted(names)


def _blocked(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(parse_plugin_spec(spec) for spec in value)


@click.group(cls=HermesGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Configuration file to use instead of the default one (see `hermes config path`).",
)
@click.option(
    "--plugins-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Drop-in plugin folder to scan instead of the default one.",
)
@click.option(
    "-p",
    "--plugin",
    "plugin",
    multiple=True,
    metavar="no:NAME",
    callback=_blocked,
    help="Block a plugin for this run (repeatable): -p no:weather.",
)
@click.option(
    "--workspace",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Workspace directory for file and terminal tools (default: the current directory); it must exist.",
)
@click.option("-v", "--verbose", is_flag=True, help="Log everything on stderr, with tracebacks.")
@click.version_option(__version__, prog_name="hermes")
@click.pass_context
def cli(ctx: click.Context, /, **_options: Any) -> None:
    """Tools for LLM agents: list, inspect and call them, check plugins and configuration.

    Environment: HERMES_HOME relocates config, data and cache; HERMES_LOAD_PLUGINS=a,b loads only those
    entry-point plugins; HERMES_BLOCK_PLUGINS=a,b blocks some; HERMES_TRACE_PLUGINS=1 traces every hook
    call with its arguments and result on stderr.
    """
    get_state(ctx)
