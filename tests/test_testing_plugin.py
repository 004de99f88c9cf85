"""The pytest plugin for plugin authors (``hermes_core.testing``), run the way an author runs it: in a pytest
session of its own (pytester), against a throw-away plugin module."""

from __future__ import annotations

import pytest

PLUGIN = """
from hermes_core import Block, ToolError, hookimpl


def shout(text: str) -> str:
    if not text.strip():
        raise ToolError("nothing to shout")
    return text.upper()


@hookimpl
def register_tools(registry):
    registry.register(
        name="shout", toolset="fun", handler=shout,
        schema={"name": "shout", "parameters": {"type": "object", "properties": {"text": {"type": "string"}},
                                                  "required": ["text"]}},
    )


@hookimpl
def pre_tool_call(name, arguments):
    if arguments.get("text") == "forbidden":
        return Block("not that word")
"""

TESTS = """
import os
from pathlib import Path

import shout_plugin


def test_home_is_private(hermes_home):
    assert os.environ["HERMES_HOME"] == str(hermes_home)
    assert "HERMES_LOAD_PLUGINS" not in os.environ


def test_only_the_named_plugin_is_loaded(make_tool_system):
    system = make_tool_system(shout_plugin)
    assert system.registry.names() == ["shout"]
    assert [r.name for r in system.plugin_records()] == ["shout_plugin"]


def test_calls_go_through_the_real_pipeline(make_tool_system, call_tool):
    system = make_tool_system(shout_plugin)
    assert call_tool(system, "shout", {"text": "hi"}).result == "HI"
    assert call_tool(system, "shout", '{"text": 3}').error_kind == "invalid_arguments"
    assert call_tool(system, "shout", {"text": " "}).status == "error"
    assert call_tool(system, "shout", {"text": "forbidden"}).status == "blocked"


def test_empty_system_for_ad_hoc_tools(tool_system, call_tool):
    tool_system.registry.register(name="one", toolset="t", handler=lambda: 1, schema={"name": "one"})
    assert call_tool(tool_system, "one").result == "1"


def test_systems_are_closed_and_isolated(make_tool_system, hermes_home):
    a, b = make_tool_system(shout_plugin), make_tool_system()
    assert "shout" in a.registry and "shout" not in b.registry
    assert Path(a.data_dir).is_relative_to(hermes_home)
"""


def test_the_fixtures_work_in_an_authors_test_session(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(shout_plugin=PLUGIN, test_shout=TESTS)
    pytester.syspathinsert()
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=5)
