"""Every test runs with its own HERMES_HOME, so nothing touches the real config, data or cache, and only the
built-in entry point loads: plugins installed in this environment (the example plugins, a developer's own)
never leak into a test unless it asks for them."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path_factory.mktemp("hermes-home")
    monkeypatch.setenv("HERMES_HOME", str(home))
    for var in ("HERMES_BLOCK_PLUGINS", "HERMES_STRICT_PLUGINS", "HERMES_TRACE_PLUGINS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HERMES_LOAD_PLUGINS", "builtin")
