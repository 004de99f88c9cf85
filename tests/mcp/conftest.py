"""Fixtures of the MCP tests (the helpers themselves are in ``mcp_helpers`` and ``serve_helpers``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import http_echo
from serve_helpers import make_served, serving_http

__all__ = ["http_echo"]


@pytest.fixture
def served(tmp_path: Path) -> dict[str, Any]:
    """The command line and environment of a ``hermes mcp serve`` for this test."""
    return make_served(tmp_path)


@pytest.fixture
def http_server(served: dict[str, Any], request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """``hermes mcp serve --http ADDRESS`` (``request.param``: address, token): the URL and what it printed."""
    address, token = request.param
    with serving_http(served, address, token) as (url, printed, _):
        yield url, printed
