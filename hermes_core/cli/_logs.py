"""Log records of the ``hermes`` loggers on stderr: one line each, tracebacks only with ``--verbose``."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator

__all__ = ["loading_reported_elsewhere", "setup_logging"]

# what loading plugins logs: the doctor and ``plugins list`` report all of it themselves
_LOAD_LOGGERS = ("hermes.plugins", "hermes.registry", "hermes.toolsets")


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


def _from_loading(record: logging.LogRecord) -> bool:
    return not record.name.startswith(_LOAD_LOGGERS)


@contextlib.contextmanager
def loading_reported_elsewhere() -> Iterator[None]:
    """Keep plugin-loading errors off stderr meanwhile (unless ``--verbose``): the command reports each itself,
    so printing the log line too would show every problem twice."""
    if _handler.verbose:
        yield
        return
    from ..plugins._precedence import announcements_muted

    _handler.addFilter(_from_loading)
    try:
        with announcements_muted():
            yield
    finally:
        _handler.removeFilter(_from_loading)
