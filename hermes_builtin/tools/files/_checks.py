"""Format checks for what ``write_file`` and ``patch`` write: Python (compiled), JSON, TOML and YAML (parsed).

A check never runs the content: Python is compiled to bytecode and thrown away, YAML is composed (no object is
constructed, so no tag can run code). A problem comes back with its line and column; the caller decides
whether the file is still written (``[plugins.file] format_check``: ``warn``, the default, ``refuse`` or ``off``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

__all__ = ["MODES", "FormatProblem", "check_text", "format_gate", "format_of", "mode_of"]

MODES = ("warn", "refuse", "off")
_BY_SUFFIX = {
    ".py": "Python",
    ".pyi": "Python",
    ".json": "JSON",
    ".ipynb": "JSON",
    ".toml": "TOML",
    ".yaml": "YAML",
    ".yml": "YAML",
}
# JSON with comments by convention: parsing them as JSON would report errors that are not there
_JSONC = re.compile(r"^(tsconfig|jsconfig)(\..+)?\.json$|^devcontainer\.json$|^\.eslintrc\.json$")
_TOML_AT = re.compile(r"\(at line (\d+), column (\d+)\)")


@dataclass(frozen=True, slots=True)
class FormatProblem:
    """Why the text is not valid ``format``, and where (1-based line and column, when known)."""

    format: str
    message: str
    line: int | None = None
    column: int | None = None

    def where(self) -> str:
        if self.line is None:
            return ""
        return f" (line {self.line}" + (f", column {self.column})" if self.column else ")")

    def describe(self, shown: str) -> str:
        return f"{shown} is not valid {self.format}: {self.message}{self.where()}"


def format_of(path: PurePath) -> str | None:
    """The format a path's name says it holds, when a check knows it."""
    fmt = _BY_SUFFIX.get(path.suffix.lower())
    if fmt == "JSON" and (_JSONC.match(path.name) or ".vscode" in path.parts):
        return None
    return fmt


def mode_of(config: dict[str, Any]) -> str:
    """``[plugins.file] format_check``, checked: ``warn`` (default), ``refuse`` or ``off``."""
    from hermes_core import ToolError

    mode = config.get("format_check", "warn")
    if mode not in MODES:
        raise ToolError(f"[plugins.file] format_check must be one of {', '.join(MODES)}, not {mode!r}")
    return str(mode)


def format_gate(
    config: dict[str, Any], path: PurePath, shown: str, after: str, before: str | None = None
) -> str:
    """The warning to append to a write's result ("" when the text is fine or unchecked).

    In ``refuse`` mode an edit that makes a valid (or new) file invalid raises ``ToolError`` before anything is
    written; a file that was already invalid may still be edited, so it can be fixed step by step.
    """
    from hermes_core import ToolError

    mode = mode_of(config)
    problem = check_text(path, after) if mode != "off" else None
    if problem is None:
        return ""
    was_broken = before is not None and check_text(path, before) is not None
    if mode == "refuse" and not was_broken:
        raise ToolError(
            f'{problem.describe(shown)}; nothing was written ([plugins.file] format_check = "refuse")'
        )
    already = " (it was already invalid before this edit)" if was_broken else ""
    return f"\nwarning: {problem.describe(shown)}{already}; the file was written as given: fix it"


def check_text(path: PurePath, text: str) -> FormatProblem | None:
    """The first problem in ``text`` as the format ``path`` names, or None (also for formats not checked)."""
    fmt = format_of(path)
    if fmt is None:
        return None
    return _CHECKS[fmt](text, path.name)


def _python(text: str, name: str) -> FormatProblem | None:
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes and the like are warnings, not errors
            compile(text, name, "exec", dont_inherit=True)
    except SyntaxError as err:
        column = err.offset if err.offset and err.offset > 0 else None
        return FormatProblem("Python", err.msg, err.lineno, column)
    except ValueError as err:  # NUL bytes
        return FormatProblem("Python", str(err))
    return None


def _json(text: str, name: str) -> FormatProblem | None:
    import json

    try:
        json.loads(text)
    except json.JSONDecodeError as err:
        return FormatProblem("JSON", err.msg, err.lineno, err.colno)
    except RecursionError:
        return FormatProblem("JSON", "nested too deeply to parse")
    return None


def _toml(text: str, name: str) -> FormatProblem | None:
    import tomllib

    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        message = str(err)
        found = _TOML_AT.search(message)
        if found is None:
            return FormatProblem("TOML", message)
        return FormatProblem("TOML", message[: found.start()].strip(), int(found[1]), int(found[2]))
    return None


def _yaml(text: str, name: str) -> FormatProblem | None:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        for _ in yaml.compose_all(text, Loader=loader):
            pass
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        message = ": ".join(p for p in (err.context, err.problem) if p) or "invalid YAML"
        if mark is None:
            return FormatProblem("YAML", message)
        return FormatProblem("YAML", message, mark.line + 1, mark.column + 1)
    except yaml.YAMLError as err:
        return FormatProblem("YAML", str(err))
    return None


_CHECKS = {"Python": _python, "JSON": _json, "TOML": _toml, "YAML": _yaml}
