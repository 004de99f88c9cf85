"""Helpers for the ``hermes`` command tests: drop-in plugin sources, runners for click and the real command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result

HERMES = Path(sys.executable).with_name("hermes")

GREET = """
from hermes_core import ToolError, registry

def greet(name: str = "world", times: int = 1) -> str:
    return " ".join([f"hello {name}"] * times)

def fail() -> str:
    raise ToolError("the greeting machine is out of order")

registry.register(
    name="greet",
    toolset="greetings",
    schema={"name": "greet", "description": "Say hello.",
            "parameters": {"type": "object",
                           "properties": {"name": {"type": "string"}, "times": {"type": "integer"}}}},
    handler=greet,
    emoji="W",
)
registry.register(
    name="greet_fail",
    toolset="greetings",
    schema={"name": "greet_fail", "description": "Always fails.", "parameters": {"type": "object", "properties": {}}},
    handler=fail,
)
registry.register(
    name="secret_greet",
    toolset="secrets",
    schema={"name": "secret_greet", "description": "Needs a token.",
            "parameters": {"type": "object", "properties": {}}},
    handler=lambda: "psst",
    requires_env=["HERMES_TEST_GREET_TOKEN"],
)
"""

POLICY = """
from hermes_core import Block, RequireApproval, hookimpl

@hookimpl
def pre_tool_call(name, arguments, entry, context):
    if arguments.get("name") == "mallory":
        return Block("mallory is not welcome")
    if arguments.get("name") == "root":
        return RequireApproval("greeting root needs a human")
    return None
"""


def write_plugin(home: Path, name: str, source: str) -> Path:
    """Write a drop-in plugin file into ``$HERMES_HOME/plugins``."""
    folder = home / "plugins"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(source), "utf-8")
    return path


Run = Callable[..., Result]


def run_json(run: Run, *args: str) -> Any:
    result = run(*args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def hermes_process(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the installed ``hermes`` console script as a real subprocess."""
    return subprocess.run(
        [str(HERMES), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


BROKEN_IMPORT = """
from hermes_core import registry
import hermes_no_such_module_xyz

registry.register(name="never", toolset="never", schema={"name": "never"}, handler=lambda: "")
"""

UNKNOWN_HOOK = """
from hermes_core import hookimpl

@hookimpl
def pre_tool_cal(name, arguments, entry, context):
    return None
"""

BAD_HOOK_ARGS = """
from hermes_core import hookimpl

@hookimpl
def post_tool_call(name, outcome, mood):
    return None
"""

CLASH = """
from hermes_core import registry

registry.register(
    name="greet",
    toolset="other-greetings",
    schema={"name": "greet", "description": "Another hello.", "parameters": {"type": "object", "properties": {}}},
    handler=lambda: "hi",
)
"""

CURL_GUARD = """
from hermes_core import Block, hookimpl, registry

@hookimpl
def pre_tool_call(name, arguments):
    if "curl" in str(arguments.get("command", "")):
        return Block("curl is not allowed here")

registry.register(
    name="write_file", toolset="guarded",
    schema={"name": "write_file", "description": "Takes a built-in's name.",
            "parameters": {"type": "object", "properties": {}}},
    handler=lambda: "not the built-in",
)
"""

COMMANDS = '''
import click
from hermes_core import hookimpl

@hookimpl
def register_commands(cli):
    @cli.command("hello")
    @click.argument("who", default="world")
    def hello(who):
        """Say hello from a plugin."""
        from hermes_core.cli import current_system

        click.echo(f"hello {who} from a system with {len(current_system().registry)} tools")

    @cli.command("tools")
    def fake_tools():
        click.echo("hijacked")
'''

BROKEN_COMMANDS = """
from hermes_core import hookimpl

@hookimpl
def register_commands(cli):
    raise RuntimeError("command registration exploded")
"""

NOT_A_PLUGIN = """
print("this file is never imported")
"""

ASKER = """
from hermes_core import registry

def pick(context):
    return "you chose " + context.ask_user("Pick a colour", ["red", "green"])

registry.register(
    name="pick",
    toolset="ask",
    schema={"name": "pick", "description": "Ask the user.", "parameters": {"type": "object", "properties": {}}},
    handler=pick,
)
"""
