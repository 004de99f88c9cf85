"""Fixtures of the MCP tests (the helpers themselves are in ``mcp_helpers``)."""

from mcp_helpers import http_echo

__all__ = ["http_echo"]
