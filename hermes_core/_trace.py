"""``HERMES_TRACE_PLUGINS=1``: every hook call, with its arguments and result, is printed to stderr."""

from __future__ import annotations

import os
import sys

__all__ = ["trace", "trace_enabled"]


def trace_enabled() -> bool:
    return os.environ.get("HERMES_TRACE_PLUGINS", "") not in ("", "0")


def trace(message: str) -> None:
    print(f"[hermes trace] {message}", file=sys.stderr)
