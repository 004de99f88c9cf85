"""Fixtures for the ``hermes`` command tests: a temporary HERMES_HOME with drop-in plugins, and a runner."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_helpers import GREET, Run, write_plugin
from click.testing import CliRunner, Result

from hermes_core.cli import cli


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's HERMES_HOME (set by tests/conftest.py), with only the built-in entry point loading."""
    path = Path(os.environ["HERMES_HOME"])
    monkeypatch.setenv("HERMES_LOAD_PLUGINS", "builtin")
    monkeypatch.delenv("HERMES_TEST_GREET_TOKEN", raising=False)
    workspace = path / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(workspace)
    return path


@pytest.fixture
def greet_home(home: Path) -> Path:
    write_plugin(home, "greet", GREET)
    return home


@pytest.fixture
def run() -> Run:
    """Invoke ``hermes ARGS...`` in-process through click's runner; stdout and stderr kept apart."""

    def invoke(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
        return CliRunner().invoke(cli, list(args), input=input, env=env, catch_exceptions=False)

    return invoke
