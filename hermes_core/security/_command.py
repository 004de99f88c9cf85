"""The command guard: ``classify_command(cmd) -> CommandVerdict``.

The command is normalised (NFKC, invisible format characters removed), parsed with the bounded shell parser
and walked: every simple command, substitution and payload it would run is judged. Text that cannot be parsed,
or that exceeds the work bounds, is dangerous (fail closed).
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from .._log import get_logger
from ._shell import ShellSyntaxError, parse
from ._verdicts import CommandVerdict, Finding

__all__ = ["MAX_COMMAND_CHARS", "classify_command", "normalize_command"]

MAX_COMMAND_CHARS = 64 * 1024
log = get_logger("hermes.security")


def normalize_command(cmd: str) -> str:
    """The exact text an approval binds to: NFKC form, format characters dropped, outer whitespace trimmed."""
    text = unicodedata.normalize("NFKC", cmd)
    if not text.isascii():
        text = "".join(ch for ch in text if unicodedata.category(ch) not in ("Cf", "Cs", "Co"))
    return text.strip()


def classify_command(
    cmd: str, *, workspace: str | Path | None = None, cwd: str | Path | None = None
) -> CommandVerdict:
    """Judge a shell command: ``.dangerous``, ``.hardline`` (never approvable), ``.findings`` and ``.reasons``.

    ``workspace`` is the project folder; ``cwd`` the directory the command will run in (default: the
    workspace): relative paths are judged from there, so ``rm -rf *`` in ``/usr`` is what it is.
    """
    if not isinstance(cmd, str):
        raise TypeError(f"command must be a str, not {type(cmd).__name__}")
    if len(cmd) > MAX_COMMAND_CHARS * 4:
        return CommandVerdict(
            cmd[:200], (Finding("unparseable", cmd[:80], "the command is too long to analyse"),)
        )
    text = normalize_command(cmd)
    if len(text) > MAX_COMMAND_CHARS:
        return CommandVerdict(
            text,
            (
                Finding(
                    "unparseable", text[:80], f"the command is longer than {MAX_COMMAND_CHARS} characters"
                ),
            ),
        )
    if "\x00" in text or "\x02" in text:
        return CommandVerdict(
            text, (Finding("unparseable", text[:80], "the command contains control characters"),)
        )
    if not text:
        return CommandVerdict(text)
    try:
        script = parse(text)
    except ShellSyntaxError as exc:
        return CommandVerdict(
            text, (Finding("unparseable", text[:80], f"the command could not be parsed: {exc}"),)
        )
    except RecursionError:
        return CommandVerdict(text, (Finding("unparseable", text[:80], "the command is nested too deeply"),))
    from . import _rules  # noqa: F401  (registers the rules)
    from ._analyze import Analyzer
    from ._protected import roots_snapshot

    ws = os.path.normpath(os.fspath(workspace)) if workspace is not None else None
    where = os.path.normpath(os.fspath(cwd)) if cwd is not None else None
    analyzer = Analyzer(ws, where)
    try:
        with roots_snapshot():  # hermes's own state, resolved once for the whole command
            analyzer.script(script)
    except RecursionError:
        analyzer.add("unparseable", text[:80], "the command is nested too deeply")
    except Exception as exc:  # fail closed: a bug in a rule must not let a command through
        log.exception("command guard failed on %r", text[:200])
        analyzer.add("internal_error", text[:80], f"the command could not be analysed ({type(exc).__name__})")
    return CommandVerdict(text, tuple(analyzer.findings))
