"""The ``hermes`` command: tools, toolsets, schemas, calls, plugins, the doctor and the config file.

``main()`` is the console script. Plugins add commands through the ``register_commands(cli)`` hook; a
plugin command reaches the invocation's tool system with ``current_system()``.
"""

from __future__ import annotations

from ._agent import chat_command, run_command
from ._app import HermesGroup, cli
from ._approvals import approvals_group
from ._call import EXIT_CODES, call_command
from ._config_cmd import config_group
from ._cron import cron_group
from ._env import env_group
from ._mcp import mcp_group
from ._plugins import plugins_group
from ._sandbox import sandbox_group
from ._search import search_command
from ._state import ConfigFailure, State, current_system, get_state
from ._tools import tools_group
from ._toolsets import schema_group, toolsets_command

__all__ = [
    "EXIT_CODES",
    "ConfigFailure",
    "HermesGroup",
    "State",
    "cli",
    "current_system",
    "get_state",
    "main",
]

for _command in (tools_group, toolsets_command, schema_group, call_command, plugins_group, config_group):
    cli.add_command(_command)
cli.add_command(chat_command)
cli.add_command(run_command)
cli.add_command(approvals_group)
cli.add_command(mcp_group)
cli.add_command(sandbox_group)
cli.add_command(env_group)
cli.add_command(cron_group)
tools_group.add_command(search_command)


def main() -> None:
    """Run the ``hermes`` command line."""
    cli.main(prog_name="hermes")
