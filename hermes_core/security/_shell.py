"""A bounded POSIX/bash parser for the command guard: source text in, a small syntax tree out.

It understands what matters for judging a command: lists (``; && || & newline``), pipelines, subshells,
brace groups, function definitions, ``case``, redirections, heredocs and here-strings, single/double/ANSI-C
quoting, backslashes, ``$var``/``${var}``, ``$(...)``, backticks and process substitution. Words are kept as
pieces (literal text, variable references, nested scripts) so the analyser can expand them later with the
variables known at that point. Anything it cannot parse raises ``ShellSyntaxError``; the caller treats that
as dangerous. Work is bounded: nesting depth and node count are capped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "MAX_DEPTH",
    "MAX_NODES",
    "Command",
    "FuncDef",
    "Group",
    "Piece",
    "Pipeline",
    "Redirect",
    "Script",
    "ShellSyntaxError",
    "Simple",
    "Word",
    "decode_ansi_c",
    "parse",
]

MAX_DEPTH = 12
MAX_NODES = 4000
MAX_NEST = 48


class ShellSyntaxError(ValueError):
    """The text is not a command this parser can read (or it exceeds the work bounds)."""


@dataclass(slots=True)
class Piece:
    """One part of a word: ``lit`` text, a ``var`` name, a ``sub``/``psub`` script, or ``arith``."""

    kind: str
    text: str = ""
    quoted: bool = False
    script: Script | None = None


@dataclass(slots=True)
class Word:
    pieces: list[Piece]
    raw: str

    def literal(self) -> str | None:
        """The word's text when it is made of literal pieces only."""
        if all(p.kind == "lit" for p in self.pieces):
            return "".join(p.text for p in self.pieces)
        return None


@dataclass(slots=True)
class Redirect:
    op: str
    fd: str
    target: Word | None = None
    heredoc: str | None = None
    heredoc_pieces: list[Piece] = field(default_factory=list)
    heredoc_delim: str = ""
    heredoc_strip: bool = False
    heredoc_expand: bool = True


@dataclass(slots=True)
class Simple:
    words: list[Word]
    redirects: list[Redirect]
    raw: str
    array_values: dict[int, list[Word]] = field(default_factory=dict)


@dataclass(slots=True)
class Group:
    body: Script
    kind: str
    redirects: list[Redirect]
    raw: str


@dataclass(slots=True)
class FuncDef:
    name: str
    body: Command
    raw: str


Command = Simple | Group | FuncDef


@dataclass(slots=True)
class Pipeline:
    commands: list[Command]
    background: bool = False


@dataclass(slots=True)
class Script:
    pipelines: list[Pipeline]


_META = frozenset(" \t\n;&|()<>")
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_REDIR_RE = re.compile(r"(\d{1,2}|\{[A-Za-z_][A-Za-z0-9_]*\})?(&>>|&>|<<<|<<-|<<|<>|<&|>&|>>|>\||<|>)")
_SKIP_KEYWORDS = frozenset({"if", "then", "elif", "else", "while", "until", "do", "!", "time", "coproc"})
_END_KEYWORDS = frozenset({"fi", "done"})
_SPECIAL_VARS = frozenset("@*#?$!-0123456789")

_ANSI_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


def decode_ansi_c(body: str) -> str:
    """Decode the escapes of a ``$'...'`` string (also used for ``printf`` and ``echo -e``)."""
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        e = body[i + 1]
        if e in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[e])
            i += 2
        elif e == "x":
            m = re.match(r"[0-9A-Fa-f]{1,2}", body[i + 2 : i + 4])
            if m:
                out.append(chr(int(m.group(), 16)))
                i += 2 + len(m.group())
            else:
                out.append("\\x")
                i += 2
        elif e in "uU":
            width = 4 if e == "u" else 8
            m = re.match(f"[0-9A-Fa-f]{{1,{width}}}", body[i + 2 : i + 2 + width])
            if m:
                code = int(m.group(), 16)
                out.append(chr(code) if code < 0x110000 and not 0xD800 <= code < 0xE000 else "?")
                i += 2 + len(m.group())
            else:
                out.append("\\" + e)
                i += 2
        elif e in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1 : i + 5] if e == "0" else body[i + 1 : i + 4])
            assert m is not None
            out.append(chr(int(m.group(), 8) & 0xFF))
            i += 1 + len(m.group())
        elif e == "c" and i + 2 < n:
            out.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
        else:
            out.append("\\" + e)
            i += 2
    return "".join(out)


class _Parser:
    def __init__(self, src: str, depth: int, counter: list[int]) -> None:
        if depth > MAX_DEPTH:
            raise ShellSyntaxError(f"nesting deeper than {MAX_DEPTH} levels")
        self.s = src
        self.n = len(src)
        self.i = 0
        self.depth = depth
        self.counter = counter
        self.pending: list[Redirect] = []
        self.nest = 0

    # -- helpers -------------------------------------------------------------------------------------
    def _tick(self) -> None:
        self.counter[0] += 1
        if self.counter[0] > MAX_NODES:
            raise ShellSyntaxError(f"more than {MAX_NODES} syntax nodes")

    def _peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < self.n else ""

    def _startswith(self, text: str) -> bool:
        return self.s.startswith(text, self.i)

    def _skip_spaces(self) -> None:
        while self.i < self.n:
            c = self.s[self.i]
            if c in " \t":
                self.i += 1
            elif c == "\\" and self._peek(1) == "\n":
                self.i += 2
            elif c == "#" and (self.i == 0 or self.s[self.i - 1] in " \t\n;&|()"):
                while self.i < self.n and self.s[self.i] != "\n":
                    self.i += 1
            else:
                break

    def _newline(self) -> None:
        self.i += 1
        for redir in self.pending:
            self._read_heredoc(redir)
        self.pending.clear()

    def _skip_blank(self) -> None:
        while True:
            self._skip_spaces()
            if self._peek() == "\n":
                self._newline()
            else:
                return

    def _read_heredoc(self, redir: Redirect) -> None:
        lines: list[str] = []
        while self.i < self.n:
            end = self.s.find("\n", self.i)
            line = self.s[self.i : end if end >= 0 else self.n]
            self.i = end + 1 if end >= 0 else self.n
            check = line.lstrip("\t") if redir.heredoc_strip else line
            if check == redir.heredoc_delim:
                break
            lines.append(line)
        body = "\n".join(lines)
        redir.heredoc = body
        if redir.heredoc_expand and ("$" in body or "`" in body):
            sub = _Parser(body, self.depth + 1, self.counter)
            redir.heredoc_pieces = sub._dq_pieces(terminator="")
        else:
            redir.heredoc_pieces = [Piece("lit", body, True)]

    # -- grammar -------------------------------------------------------------------------------------
    def parse_script(self, closer: str = "", stop_words: frozenset[str] = frozenset()) -> Script:
        self.nest += 1
        if self.nest > MAX_NEST:
            raise ShellSyntaxError(f"groups nested deeper than {MAX_NEST} levels")
        try:
            return self._parse_list(closer, stop_words)
        finally:
            self.nest -= 1

    def _parse_list(self, closer: str, stop_words: frozenset[str]) -> Script:
        pipelines: list[Pipeline] = []
        pending = ""
        while True:
            self._skip_blank()
            c = self._peek()
            if pending and (not c or (closer == ")" and c == ")")):
                raise ShellSyntaxError(f"{pending!r} is not followed by a command")
            if not c:
                if closer:
                    raise ShellSyntaxError(f"missing closing {closer!r}")
                break
            if closer == ")" and c == ")":
                break
            if self._startswith(";;") and "esac" in stop_words:
                break
            word = self._peek_word()
            if word is not None and (word in stop_words or (closer == "}" and word == "}")):
                break
            pipe = self._parse_pipeline(closer, stop_words)
            if pipe.commands:
                pipelines.append(pipe)
            pending = ""
            self._skip_spaces()
            c = self._peek()
            if self._startswith("&&") or self._startswith("||"):
                pending = self.s[self.i : self.i + 2]
                self.i += 2
            elif self._startswith(";;"):
                if "esac" not in stop_words:
                    raise ShellSyntaxError("';;' outside of case")
                break
            elif c == ";":
                self.i += 1
            elif c == "&":
                self.i += 1
                pipe.background = True
            elif c == "\n":
                self._newline()
            elif not c or c == ")":
                continue
            else:
                nxt = self._peek_word()
                if nxt is not None and (nxt in stop_words or (closer == "}" and nxt == "}")):
                    continue
                raise ShellSyntaxError(f"unexpected {c!r} at offset {self.i}")
        return Script(pipelines)

    def _peek_word(self) -> str | None:
        m = re.match(r"[^\s;&|()<>'\"\\$`]+", self.s[self.i : self.i + 64])
        if not m:
            return None
        end = self.i + m.end()
        if end < self.n and self.s[end] not in _META:
            return None
        return m.group()

    def _parse_pipeline(self, closer: str, stop_words: frozenset[str]) -> Pipeline:
        commands: list[Command] = []
        while True:
            self._skip_spaces()
            cmd = self._parse_command(closer, stop_words)
            if cmd is not None:
                commands.append(cmd)
            self._skip_spaces()
            if self._startswith("||"):
                break
            if self._startswith("|&"):
                self.i += 2
            elif self._peek() == "|":
                self.i += 1
            else:
                break
            self._skip_blank()
            if not self._peek() or self._peek() in ";)|&":
                raise ShellSyntaxError("'|' is not followed by a command")
        return Pipeline(commands)

    def _parse_command(self, closer: str, stop_words: frozenset[str]) -> Command | None:
        self._tick()
        start = self.i
        if self._startswith("(("):
            self._skip_arith(2)
            return Simple([], [], self.s[start : self.i])
        if self._peek() == "(":
            self.i += 1
            body = self.parse_script(closer=")")
            self.i += 1
            return Group(body, "subshell", self._trailing_redirects(), self.s[start : self.i])
        words: list[Word] = []
        redirects: list[Redirect] = []
        arrays: dict[int, list[Word]] = {}
        while True:
            self._skip_spaces()
            c = self._peek()
            if not c or c in "\n;)" or (c == "|") or (c == "&" and self._peek(1) != ">"):
                break
            m = _REDIR_RE.match(self.s, self.i)
            if m and not (m.group(2) in ("<", ">") and self._peek(m.end() - self.i) == "("):
                redirects.append(self._parse_redirect(m))
                continue
            if c == "(" and not words:
                raise ShellSyntaxError(f"unexpected '(' at offset {self.i}")
            if c == "(":
                if len(words) == 1 and not redirects and re.match(r"\(\s*\)", self.s[self.i :]):
                    name = words[0].literal() or ""
                    self.i = self.s.index(")", self.i) + 1
                    return self._function_body(name, start)
                raise ShellSyntaxError(f"unexpected '(' at offset {self.i}")
            word = self._read_word()
            lit = word.literal()
            if not words and not redirects and lit is not None:
                if lit in _SKIP_KEYWORDS:
                    continue
                if lit in _END_KEYWORDS:
                    continue
                if lit == "{":
                    body = self.parse_script(closer="}")
                    self._skip_spaces()
                    self.i += 1
                    redirects = self._trailing_redirects()
                    return Group(body, "brace", redirects, self.s[start : self.i])
                if lit == "function":
                    self._skip_spaces()
                    name_word = self._read_word()
                    self._skip_spaces()
                    if self._startswith("()"):
                        self.i += 2
                    elif re.match(r"\(\s*\)", self.s[self.i :]):
                        self.i = self.s.index(")", self.i) + 1
                    return self._function_body(name_word.literal() or "", start)
                if lit == "case":
                    return self._parse_case(start)
                if lit == "for" or lit == "select":
                    self._skip_spaces()
                    if self._startswith("(("):
                        self._skip_arith(2)
                        return Simple([], [], self.s[start : self.i])
            if lit is not None and lit.endswith("=") and self._peek() == "(" and _NAME_RE.fullmatch(lit[:-1]):
                self.i += 1
                values: list[Word] = []
                while True:
                    self._skip_blank()
                    if self._peek() == ")":
                        self.i += 1
                        break
                    if not self._peek():
                        raise ShellSyntaxError("unclosed array assignment")
                    values.append(self._read_word())
                arrays[len(words)] = values
            words.append(word)
        return Simple(words, redirects, self.s[start : self.i], arrays)

    def _function_body(self, name: str, start: int) -> FuncDef:
        self._skip_blank()
        body = self._parse_command("", frozenset())
        if body is None:
            raise ShellSyntaxError(f"function {name!r} has no body")
        return FuncDef(name, body, self.s[start : self.i])

    def _parse_case(self, start: int) -> Group:
        self._skip_spaces()
        subject = self._read_word()
        self._skip_blank()
        if self._peek_word() != "in":
            raise ShellSyntaxError("case without 'in'")
        self.i += 2
        pipelines: list[Pipeline] = [
            Pipeline([Simple([Word([Piece("lit", "__case__")], ""), subject], [], subject.raw)])
        ]
        while True:
            self._skip_blank()
            if self._peek_word() == "esac":
                self.i += 4
                break
            if not self._peek():
                raise ShellSyntaxError("case without 'esac'")
            if self._peek() == "(":
                self.i += 1
            while True:
                self._skip_spaces()
                self._read_word()
                self._skip_spaces()
                if self._peek() == "|":
                    self.i += 1
                    continue
                if self._peek() != ")":
                    raise ShellSyntaxError("bad case pattern")
                self.i += 1
                break
            body = self.parse_script(stop_words=frozenset({"esac"}))
            pipelines.extend(body.pipelines)
            if self._startswith(";;&"):
                self.i += 3
            elif self._startswith(";;") or self._startswith(";&"):
                self.i += 2
        return Group(Script(pipelines), "case", self._trailing_redirects(), self.s[start : self.i])

    def _trailing_redirects(self) -> list[Redirect]:
        out: list[Redirect] = []
        while True:
            self._skip_spaces()
            m = _REDIR_RE.match(self.s, self.i)
            if not m:
                return out
            out.append(self._parse_redirect(m))

    def _parse_redirect(self, m: re.Match[str]) -> Redirect:
        op = m.group(2)
        fd = m.group(1) or ""
        self.i = m.end()
        self._skip_spaces()
        if not self._peek() or self._peek() in "\n;|&)":
            raise ShellSyntaxError(f"redirection {op!r} without a target")
        target = self._read_word()
        redir = Redirect(op, fd, target)
        if op in ("<<", "<<-"):
            delim = target.literal()
            quoted = any(p.quoted for p in target.pieces)
            if delim is None:
                delim = "".join(p.text for p in target.pieces)
            redir.heredoc_delim = delim
            redir.heredoc_strip = op == "<<-"
            redir.heredoc_expand = not quoted
            self.pending.append(redir)
        return redir

    def _skip_arith(self, opened: int) -> None:
        self.i += opened
        depth = opened
        while self.i < self.n:
            c = self.s[self.i]
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    self.i += 1
                    return
            self.i += 1
        raise ShellSyntaxError("unclosed arithmetic expression")

    # -- words ---------------------------------------------------------------------------------------
    def _read_word(self) -> Word:
        start = self.i
        pieces: list[Piece] = []
        buf: list[str] = []

        def flush() -> None:
            if buf:
                pieces.append(Piece("lit", "".join(buf), False))
                buf.clear()

        while self.i < self.n:
            c = self.s[self.i]
            if c in "<>" and self._peek(1) == "(" and self.i == start:
                flush()
                self.i += 2
                body = _Parser(self.s, self.depth + 1, self.counter)
                body.i = self.i
                script = body.parse_script(closer=")")
                self.i = body.i + 1
                pieces.append(Piece("psub", c, False, script))
                continue
            if c in _META:
                break
            if c == "'":
                flush()
                end = self.s.find("'", self.i + 1)
                if end < 0:
                    raise ShellSyntaxError("unterminated single quote")
                pieces.append(Piece("lit", self.s[self.i + 1 : end], True))
                self.i = end + 1
            elif c == '"':
                flush()
                self.i += 1
                pieces.extend(self._dq_pieces(terminator='"'))
            elif c == "\\":
                if self._peek(1) == "\n":
                    self.i += 2
                    continue
                flush()
                if self.i + 1 < self.n:
                    pieces.append(Piece("lit", self.s[self.i + 1], True))
                self.i += 2
            elif c == "$" and self._peek(1) == "'":
                flush()
                self.i += 2
                body_chars: list[str] = []
                while True:
                    if self.i >= self.n:
                        raise ShellSyntaxError("unterminated $'...' string")
                    ch = self.s[self.i]
                    if ch == "\\" and self.i + 1 < self.n:
                        body_chars.append(self.s[self.i : self.i + 2])
                        self.i += 2
                        continue
                    if ch == "'":
                        self.i += 1
                        break
                    body_chars.append(ch)
                    self.i += 1
                pieces.append(Piece("lit", decode_ansi_c("".join(body_chars)), True))
            elif c == "$" and self._peek(1) == '"':
                flush()
                self.i += 2
                pieces.extend(self._dq_pieces(terminator='"'))
            elif c == "$" or c == "`":
                flush()
                pieces.append(self._dollar_or_backtick(quoted=False))
            else:
                buf.append(c)
                self.i += 1
        flush()
        if self.i == start:
            raise ShellSyntaxError(f"unexpected {self._peek()!r} at offset {self.i}")
        return Word(pieces, self.s[start : self.i])

    def _dq_pieces(self, terminator: str) -> list[Piece]:
        pieces: list[Piece] = []
        buf: list[str] = []
        while True:
            if self.i >= self.n:
                if terminator:
                    raise ShellSyntaxError("unterminated double quote")
                break
            c = self.s[self.i]
            if terminator and c == terminator:
                self.i += 1
                break
            if c == "\\" and self.i + 1 < self.n and self.s[self.i + 1] in '$`"\\\n':
                if self.s[self.i + 1] != "\n":
                    buf.append(self.s[self.i + 1])
                self.i += 2
            elif c == "$" or c == "`":
                if buf:
                    pieces.append(Piece("lit", "".join(buf), True))
                    buf = []
                pieces.append(self._dollar_or_backtick(quoted=True))
            else:
                buf.append(c)
                self.i += 1
        if buf or not pieces:
            pieces.append(Piece("lit", "".join(buf), True))
        return pieces

    def _dollar_or_backtick(self, quoted: bool) -> Piece:
        c = self.s[self.i]
        if c == "`":
            chars: list[str] = []
            self.i += 1
            while True:
                if self.i >= self.n:
                    raise ShellSyntaxError("unterminated backtick")
                ch = self.s[self.i]
                if ch == "\\" and self.i + 1 < self.n and self.s[self.i + 1] in "`\\$":
                    chars.append(self.s[self.i + 1])
                    self.i += 2
                    continue
                if ch == "`":
                    self.i += 1
                    break
                chars.append(ch)
                self.i += 1
            script = _Parser("".join(chars), self.depth + 1, self.counter).parse_all()
            return Piece("sub", "", quoted, script)
        nxt = self._peek(1)
        if nxt == "(" and self._peek(2) == "(":
            self.i += 1
            self._skip_arith(2)
            return Piece("arith", "0", quoted)
        if nxt == "(":
            self.i += 2
            body = _Parser(self.s, self.depth + 1, self.counter)
            body.i = self.i
            script = body.parse_script(closer=")")
            self.i = body.i + 1
            return Piece("sub", "", quoted, script)
        if nxt == "{":
            depth = 0
            j = self.i + 1
            while j < self.n:
                ch = self.s[j]
                if ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                    if depth == 0:
                        break
                elif ch == "\\":
                    j += 1
                j += 1
            if j >= self.n:
                raise ShellSyntaxError("unterminated ${...}")
            inner = self.s[self.i + 2 : j]
            self.i = j + 1
            return self._param(inner, quoted)
        if nxt and nxt.isascii() and (nxt.isalpha() or nxt == "_"):
            m = _NAME_RE.match(self.s, self.i + 1)
            assert m is not None
            self.i = m.end()
            return Piece("var", m.group(), quoted)
        if nxt and nxt in _SPECIAL_VARS:
            self.i += 2
            return Piece("var", nxt, quoted)
        self.i += 1
        return Piece("lit", "$", quoted)

    def _param(self, inner: str, quoted: bool) -> Piece:
        m = re.match(r"([#!]?)([A-Za-z_][A-Za-z0-9_]*|[@*#?$!0-9-])(.*)", inner, re.S)
        if not m:
            raise ShellSyntaxError(f"bad parameter expansion ${{{inner}}}")
        prefix, name, rest = m.groups()
        piece = Piece("var", name, quoted)
        if prefix:
            piece.text = "?" if prefix == "#" else "!" + name
        elif rest:
            dm = re.match(r":?[-=?+](.*)", rest, re.S)
            if dm and not rest.startswith(("+", ":+")):
                sub = _Parser(dm.group(1), self.depth + 1, self.counter)
                default = sub._dq_pieces(terminator="")
                piece.script = Script([Pipeline([Simple([Word(default, dm.group(1))], [], "")])])
                piece.kind = "vardefault"
            elif re.match(r":\d+(:\d+)?$", rest) and name == "IFS":
                piece.text = "IFS"
            else:
                piece.kind = "varop"
        return piece

    def parse_all(self) -> Script:
        script = self.parse_script()
        if self.i < self.n:
            raise ShellSyntaxError(f"unexpected {self._peek()!r} at offset {self.i}")
        for redir in self.pending:
            redir.heredoc = ""
        return script


def parse(src: str) -> Script:
    """Parse ``src`` into a ``Script``; raises ``ShellSyntaxError`` when it can't (or when it is too big)."""
    return _Parser(src, 0, [0]).parse_all()
