"""Log records of the ``hermes`` loggers on stderr: one line each, tracebacks only with ``--verbose``."""

from __future__ import annotations

import logging
import sys

__all__ = ["setup_logging"]


class _StderrHandler(logging.Handler):
    """Writes to whatever ``sys.stderr`` is at emit time (so captured runs capture it too)."""

    def __init__(self) -> None:
        super().__init__()
        self.verbose = False

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = f"hermes: {record.levelname.lower()}: {record.getMessage()}"
            if self.verbose and record.exc_info:
                text += "\n" + logging.Formatter().formatException(record.exc_info)
            print(text, file=sys.stderr)
        except Exception:
            self.handleError(record)


_handler = _StderrHandler()


def setup_logging(verbose: bool) -> None:
    """Route the ``hermes`` loggers to stderr: warnings and errors, or everything with tracebacks if verbose."""
    logger = logging.getLogger("hermes")
    _handler.verbose = verbose
    _handler.setLevel(logging.DEBUG if verbose else logging.WARNING)
    if _handler not in logger.handlers:
        logger.addHandler(_handler)
    if verbose or logger.level == logging.NOTSET or logger.level > logging.WARNING:
        logger.setLevel(logging.DEBUG if verbose else logging.WARNING)
