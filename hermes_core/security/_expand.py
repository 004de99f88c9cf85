"""Word expansion for the command guard: quotes, variables, ``$IFS``, braces and field splitting.

Expansion is symbolic: a substitution or an unknown variable becomes ``UNKNOWN`` text; the caller decides
what a substitution stands for (it analyses the nested script and may know its output, e.g. ``echo rm``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ._shell import Piece, Script, Word
from ._targets import UNKNOWN

__all__ = ["MAX_BRACE", "Expansion", "SubResult", "brace_expand", "expand_word"]

MAX_BRACE = 128
_KNOWN_ENV = {"HOME": "~", "PWD": ".", "OLDPWD": "..", "IFS": " ", "TMPDIR": "/tmp"}
_HERMES_ENV = ("HERMES_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME")  # read from this process


@dataclass(slots=True)
class SubResult:
    """What the analyser learnt about a substitution: its output text when static, and its taints."""

    text: str | None
    taints: frozenset[str] = frozenset()


@dataclass(slots=True)
class Expansion:
    fields: list[str]
    dynamic: bool = False
    taints: set[str] = field(default_factory=set)
    var_names: set[str] = field(default_factory=set)
    psub: bool = False


SubHook = Callable[[Script, str], SubResult]


def _brace_alternatives(t: str, q: list[bool], start: int) -> tuple[int, list[tuple[int, int]]] | None:
    depth = 0
    commas: list[int] = []
    for j in range(start + 1, len(t)):
        if q[j]:
            continue
        ch = t[j]
        if ch == "{":
            depth += 1
        elif ch == "}":
            if depth == 0:
                if not commas:
                    return None
                bounds = [start + 1, *[c + 1 for c in commas]]
                ends = [*commas, j]
                return j, list(zip(bounds, ends, strict=True))
            depth -= 1
        elif ch == "," and depth == 0:
            commas.append(j)
    return None


def brace_expand(t: str, q: list[bool]) -> list[tuple[str, list[bool]]]:
    """Bash brace expansion (``a{b,c}d``, ``{1..3}``) on unquoted braces, capped at ``MAX_BRACE`` results."""
    out: list[tuple[str, list[bool]]] = []
    todo = [(t, q)]
    while todo:
        s, m = todo.pop()
        if len(out) + len(todo) > MAX_BRACE:
            out.append((s, m))
            continue
        for i, ch in enumerate(s):
            if ch != "{" or m[i]:
                continue
            alt = _brace_alternatives(s, m, i)
            if alt is not None:
                end, parts = alt
                for a, b in reversed(parts):
                    todo.append((s[:i] + s[a:b] + s[end + 1 :], m[:i] + m[a:b] + m[end + 1 :]))
                break
            seq = re.match(r"\{(-?\d{1,4}|[A-Za-z])\.\.(-?\d{1,4}|[A-Za-z])\}", s[i:])
            if seq and not any(m[i : i + seq.end()]):
                lo, hi = seq.group(1), seq.group(2)
                if lo.lstrip("-").isdigit() and hi.lstrip("-").isdigit():
                    a, b = int(lo), int(hi)
                    step = 1 if b >= a else -1
                    vals = [str(v) for v in range(a, b + step, step)][:MAX_BRACE]
                else:
                    a, b = ord(lo), ord(hi)
                    step = 1 if b >= a else -1
                    vals = [chr(v) for v in range(a, b + step, step)][:MAX_BRACE]
                tail = s[i + seq.end() :]
                mt = m[i + seq.end() :]
                for v in reversed(vals):
                    todo.append((s[:i] + v + tail, m[:i] + [True] * len(v) + mt))
                break
        else:
            out.append((s, m))
    return out


def expand_word(word: Word, variables: dict[str, str], on_sub: SubHook) -> Expansion:
    """Expand ``word`` into fields, reporting whether anything was only known at run time."""
    exp = Expansion([])
    chars: list[str] = []
    mask: list[bool] = []

    def add(text: str, quoted: bool) -> None:
        chars.append(text)
        mask.extend([quoted] * len(text))

    for piece in word.pieces:
        _expand_piece(piece, variables, on_sub, exp, add)
    text = "".join(chars)
    results = brace_expand(text, mask) if "{" in text else [(text, mask)]
    for s, m in results:
        current: list[str] = []
        started = False
        for ch, quoted in zip(s, m, strict=True):
            if not quoted and ch in " \t\n":
                if current or started:
                    exp.fields.append("".join(current))
                current = []
                started = False
                continue
            current.append(ch)
            started = started or quoted
        if current or started:
            exp.fields.append("".join(current))
    return exp


def _expand_piece(
    piece: Piece, variables: dict[str, str], on_sub: SubHook, exp: Expansion, add: Callable[[str, bool], None]
) -> None:
    kind = piece.kind
    if kind == "lit":
        add(piece.text, piece.quoted)
    elif kind == "arith":
        add("0", True)
    elif kind in ("var", "vardefault", "varop"):
        name = piece.text
        if kind == "var" and name in variables:
            add(variables[name], piece.quoted)
        elif kind == "var" and (name in _KNOWN_ENV):
            add(_KNOWN_ENV[name], piece.quoted and name != "IFS")
        elif kind == "var" and name in _HERMES_ENV and os.environ.get(name):
            add(os.environ[name], piece.quoted)  # where hermes keeps its state: the guard must see it
        elif kind == "var" and name == "IFS":
            add(" ", False)
        elif kind == "vardefault" and name in variables and variables[name]:
            add(variables[name], piece.quoted)
        elif kind == "vardefault" and piece.script is not None:
            exp.var_names.add(name)
            inner = piece.script.pipelines[0].commands[0]
            words = getattr(inner, "words", [])
            for w in words:
                sub = expand_word(w, variables, on_sub)
                exp.dynamic = exp.dynamic or sub.dynamic
                exp.taints |= sub.taints
                add(" ".join(sub.fields), piece.quoted)
        else:
            exp.var_names.add(name)
            exp.dynamic = True
            add(UNKNOWN, True)
    elif kind in ("sub", "psub") and piece.script is not None:
        result = on_sub(piece.script, kind)
        exp.taints |= result.taints
        if kind == "psub":
            exp.psub = True
            exp.taints.add("psub")
            add("/dev/fd/63", True)
        elif result.text is None:
            exp.dynamic = True
            add(UNKNOWN, True)
        else:
            add(result.text, piece.quoted)
