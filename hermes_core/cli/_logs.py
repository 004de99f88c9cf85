"""Log records of the ``hermes`` loggers: on stderr one line each (warnings and errors; everything with tracebacks
under ``--verbose``), and in a rotating log file under the data folder (``hermes config path`` names it) with
times and tracebacks, secrets redacted: what "the details are in the log" refers to."""

from __future__ import annotations

import contextlib
import logging
import logging.handlers
import sys
from collections.abc import Iterator
from pathlib import Path

__all__ = ["LOG_BACKUPS", "LOG_BYTES", "loading_reported_elsewhere", "setup_logging"]

LOG_BYTES = 1_000_000  # the log file rotates at this size, keeping LOG_BACKUPS older files
LOG_BACKUPS = 3

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


class _RedactingFormatter(logging.Formatter):
    """Times, process, level and logger, the message and its traceback, with secrets redacted."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        try:
            from ..security import redact
        except Exception:  # the log must never fail for want of the redactor
            return text
        return redact(text)


_handler = _StderrHandler()
_file: logging.handlers.RotatingFileHandler | None = None


def _file_handler(path: Path) -> logging.handlers.RotatingFileHandler | None:
    """The rotating log file at ``path`` (its folder readable by this user only), or None when it cannot be."""
    global _file
    if _file is not None and Path(_file.baseFilename) == path.absolute():
        return _file
    if _file is not None:
        logging.getLogger("hermes").removeHandler(_file)
        _file.close()
        _file = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=LOG_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8", delay=True
        )
    except OSError:  # a read-only home: the command still runs, only without its log file
        return None
    handler.setFormatter(_RedactingFormatter())
    _file = handler
    return handler


def setup_logging(verbose: bool) -> None:
    """Route the ``hermes`` loggers to stderr (warnings and errors, or everything with tracebacks if verbose) and
    to the rotating log file (from INFO, or everything if verbose)."""
    from ..paths import log_file

    logger = logging.getLogger("hermes")
    _handler.verbose = verbose
    _handler.setLevel(logging.DEBUG if verbose else logging.WARNING)
    if _handler not in logger.handlers:
        logger.addHandler(_handler)
    handler = _file_handler(log_file())
    if handler is not None:
        handler.setLevel(logging.DEBUG if verbose else logging.INFO)
        if handler not in logger.handlers:
            logger.addHandler(handler)
    if verbose or logger.level == logging.NOTSET or logger.level > logging.INFO:
        logger.setLevel(logging.DEBUG if verbose else logging.INFO)


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
