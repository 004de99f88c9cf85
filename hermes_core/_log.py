"""The library's loggers, with the ``logging`` module loaded at their first use.

A process that loads hermes and logs nothing (a CLI command, a script) does not pay for importing
``logging`` and what it pulls in (~6 ms). An INFO or DEBUG record made while nothing has imported ``logging``
is dropped without loading it: nobody can have configured a level or a handler then, so the default (the
root at WARNING) would drop it too. The first use of any of these loggers also gives the ``hermes`` logger its
``NullHandler``: a library logs, the host decides where the records go (without one, Python would print a
library's warnings to stderr when the host configured nothing).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import logging

__all__ = ["get_logger"]

_ready = False
_BELOW_WARNING = frozenset({"debug", "info"})


def _logging() -> Any:
    global _ready
    import logging

    if not _ready:
        logging.getLogger("hermes").addHandler(logging.NullHandler())
        _ready = True
    return logging


class _Logger:
    """A ``logging.Logger`` by name, looked up when first used."""

    __slots__ = ("_logger", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger: Any = None

    def __getattr__(self, attr: str) -> Any:
        logger = self._logger
        if logger is None:
            if attr in _BELOW_WARNING and "logging" not in sys.modules:
                return _dropped
            logger = self._logger = _logging().getLogger(self.name)
        return getattr(logger, attr)


def _dropped(*args: object, **kwargs: object) -> None:
    """An INFO or DEBUG record while ``logging`` is not loaded: the default configuration would drop it."""


def get_logger(name: str) -> logging.Logger:
    """The logger ``name`` (under ``hermes``), loading ``logging`` at its first use."""
    return cast("logging.Logger", _Logger(name))
