"""``ToolArgumentError`` and ``ArgumentProblem``: what a model is told when its arguments are refused.

Messages are short and bounded: at most a few problems, every echoed value cut to about 60 characters,
never a stack trace or a library URL.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any, NamedTuple

__all__ = ["MAX_LISTED", "ArgumentProblem", "ToolArgumentError", "describe", "format_path", "join_path"]

MAX_LISTED = 5
_VALUE_CHARS = 60
_PREFIX = "Invalid arguments for this tool: "


class ArgumentProblem(NamedTuple):
    """One bad field: ``path`` (``items[2].name``, or ``$`` for the whole input), what was expected, what came.

    ``message`` is the rendered sentence; it is derived from the other fields unless given.
    """

    path: str
    expected: str
    got: str
    message: str = ""

    def render(self) -> str:
        """The sentence shown to the model for this problem."""
        if self.message:
            return self.message
        where = "arguments" if self.path == "$" else repr(self.path)
        return f"{where}: expected {self.expected}, got {self.got}"


class ToolArgumentError(ValueError):
    """The model's arguments were refused; ``str(error)`` is the message to send back so it can retry.

    ``errors`` lists every problem found (the message names at most the first five).
    """

    def __init__(self, errors: Iterable[ArgumentProblem]) -> None:
        self.errors: list[ArgumentProblem] = list(errors)
        parts = [problem.render() for problem in self.errors[:MAX_LISTED]]
        extra = len(self.errors) - MAX_LISTED
        if extra > 0:
            parts.append(f"and {extra} more problem{'s' if extra > 1 else ''}")
        super().__init__(_PREFIX + "; ".join(parts) + ".")

    @classmethod
    def single(cls, path: str, expected: str, got: str, message: str = "") -> ToolArgumentError:
        """An error holding one problem."""
        return cls([ArgumentProblem(path, expected, got, message)])


def _cut(text: str, limit: int = _VALUE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe(value: Any) -> str:
    """A short, bounded rendering of a value for a message: ``"ten"``, ``3.5``, ``null``, ``an array of 3 items``."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return json.dumps(_cut(value), ensure_ascii=False)
    if isinstance(value, int):
        if value.bit_length() > 190:  # about 57 digits; str() of a huge int is slow or refused
            return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
        return _cut(str(value))
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return _cut(repr(value))
    if isinstance(value, list | tuple):
        n = len(value)
        return "an empty array" if n == 0 else f"an array of {n} item{'s' if n != 1 else ''}"
    if isinstance(value, dict):
        n = len(value)
        return "an empty object" if n == 0 else f"an object with {n} key{'s' if n != 1 else ''}"
    return f"a value of type {type(value).__name__}"


def join_path(base: str, key: object) -> str:
    """Extend a path: ``join_path("items[2]", "name") == "items[2].name"``; ``join_path("$", "a") == "a"``."""
    if isinstance(key, int) and not isinstance(key, bool):
        return f"[{key}]" if base == "$" else f"{base}[{key}]"
    text = key if isinstance(key, str) else repr(key)
    if text.isidentifier():
        return text if base == "$" else f"{base}.{text}"
    quoted = json.dumps(_cut(text, 40), ensure_ascii=False)
    return f"[{quoted}]" if base == "$" else f"{base}[{quoted}]"


def format_path(parts: Iterable[object]) -> str:
    """Render a sequence of keys and indexes as a path; an empty sequence is ``$``."""
    path = "$"
    for part in parts:
        path = join_path(path, part)
    return path
