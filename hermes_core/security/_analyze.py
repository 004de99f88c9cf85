"""The walk over a parsed command: expand words, strip wrappers, follow payloads, collect findings.

Each simple command becomes an argv after expansion; wrappers (``sudo``, ``env``, ``timeout``...) are peeled
off; payloads (``bash -c``, ``eval``, ``xargs``, ``find -exec``, heredocs fed to a shell, ``ssh host cmd``...)
are analysed as commands in their own right. Pipelines are judged as a whole (download or decode piped into a
shell, environment piped to the network). The per-command rules live in ``_rules``.
"""

from __future__ import annotations

import functools
import posixpath
import re
from dataclasses import dataclass, field

from ._code import code_findings, shell_strings, sql_findings
from ._expand import SubResult, expand_word
from ._protected import code_findings as protected_code
from ._shell import (
    MAX_DEPTH,
    FuncDef,
    Group,
    Piece,
    Pipeline,
    Redirect,
    Script,
    ShellSyntaxError,
    Simple,
    Word,
)
from ._shell import parse as parse_shell
from ._targets import UNKNOWN, credential_path, deletion_risk, normalize, write_risk
from ._verdicts import Finding

__all__ = ["OWN_PID", "Analyzer", "Stage", "command_name"]

SHELLS = frozenset(
    {
        "sh",
        "bash",
        "dash",
        "zsh",
        "ksh",
        "mksh",
        "ash",
        "fish",
        "csh",
        "tcsh",
        "rbash",
        "yash",
        "pdksh",
        "posh",
    }
)
INTERPRETERS = frozenset(
    {
        "python", "python2", "python3", "pypy", "pypy3", "perl", "ruby", "node", "nodejs", "php", "lua",
        "luajit", "rscript", "tclsh", "deno", "bun", "osascript", "irb", "jrunscript", "pwsh", "powershell",
    }
)  # fmt: skip
AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})
DOWNLOADERS = frozenset(
    {"curl", "wget", "wget2", "fetch", "aria2c", "http", "https", "xh", "curlie", "lwp-request"}
)
NET_TOOLS = frozenset({"nc", "ncat", "netcat", "socat", "telnet", "cryptcat", "pwncat", "rlwrap-nc", "ztcp"})
SENDERS = (
    DOWNLOADERS
    | NET_TOOLS
    | frozenset({"ssh", "scp", "sftp", "rsync", "ftp", "mail", "mailx", "sendmail", "mutt"})
)
DB_CLIENTS = frozenset(
    {
        "psql", "mysql", "mariadb", "sqlite3", "sqlcmd", "cqlsh", "clickhouse-client", "mongo", "mongosh",
        "redis-cli", "duckdb", "snowsql", "isql", "sqlplus", "mysqlsh", "pgcli", "mycli", "litecli", "usql",
        "valkey-cli", "keydb-cli", "memcached-tool",
    }
)  # fmt: skip
ENV_DUMPERS = frozenset({"env", "printenv", "set", "export", "declare", "typeset", "compgen"})
SAFE_DYNAMIC_VARS = frozenset(
    {
        "EDITOR",
        "VISUAL",
        "PAGER",
        "PYTHON",
        "CC",
        "CXX",
        "MAKE",
        "GIT",
        "DOCKER",
        "BROWSER",
        "NODE",
        "NPM",
        "GO",
    }
)
ENV_SETUP_TOOLS = frozenset(
    {
        "ssh-agent", "pyenv", "rbenv", "nodenv", "goenv", "jenv", "direnv", "conda", "brew", "minikube",
        "docker-machine", "opam", "zoxide", "starship", "fnm", "mise", "rtx", "keychain", "dircolors",
        "gpg-agent", "luarocks", "thefuck", "navi", "atuin", "mcfly", "rustup", "asdf", "nvm", "poetry",
        "pipenv", "kubectl", "gh", "register-python-argcomplete", "_python_argcomplete", "micromamba", "mamba",
        "pdm", "uv", "rye", "hatch", "just", "aws_completer", "helm", "terraform",
    }
)  # fmt: skip
_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_VERSIONED = re.compile(r"(python|pypy|perl|ruby|node|php|lua|tclsh|mkfs|pip)[\d.]*$")
_KNOWN_NAMES = (
    "rm", "dd", "mkfs", "shred", "wipefs", "chmod", "chown", "bash", "sh", "zsh", "curl", "wget", "nc",
    "python", "python3", "perl", "kill", "killall", "shutdown", "reboot", "halt", "poweroff", "mv", "cp",
    "find", "crontab", "iptables", "setenforce", "sudo", "env", "eval", "base64", "tee", "truncate", "socat",
)  # fmt: skip
_BIN_DIRS = ("/bin/", "/usr/bin/", "/sbin/", "/usr/sbin/", "/usr/local/bin/", "")
_LOOP_HEAD = re.compile(r"^\s*(?:(?:then|else|do|!)\s+)*(while|until)\s")
_LOOP_END = re.compile(r"^\s*done\b")
_ALWAYS = {"while": ("true", ":", "[ 1 ]", "test 1", "((1))"), "until": ("false", "! :", "! true")}
_MAX_WRITTEN = 16
OWN_PID = UNKNOWN + "own-pid"  # the value of a variable holding $! or $$ (known only at run time)


GLOB_NAMES: list[str] = list(_KNOWN_NAMES)  # the rules module appends every command it has a rule for
_glob_blob: dict[int, str] = {}  # "<bin dir><name>" candidates, one per line, by length (-1: all of them)


def register_glob_names(names: tuple[str, ...]) -> None:
    """Let globbed command words (``/???/?m``, ``/sbin/shut*``) resolve to these command names too."""
    GLOB_NAMES.extend(n for n in names if n not in GLOB_NAMES and n.isascii() and len(n) > 1)
    _glob_blob.clear()
    _glob_name.cache_clear()


def _glob_regex(word: str) -> tuple[str, int]:
    """A regex for the shell glob ``word`` that never matches across a newline, and its fixed match length.

    The length is -1 when the glob holds a ``*`` (any length).
    """
    out: list[str] = []
    i = 0
    while i < len(word):
        ch = word[i]
        if ch == "*":
            out.append("[^\\n/]*")
        elif ch == "?":
            out.append("[^\\n/]")
        elif ch == "[" and (end := word.find("]", i + 2)) != -1:
            body = word[i + 1 : end]
            neg = body[:1] in ("!", "^")
            body = body[1:] if neg else body
            out.append("[" + ("^\\n/" if neg else "") + body.replace("\\", "\\\\").replace("[", "\\[") + "]")
            i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out), (-1 if "*" in word else len(out))


@functools.lru_cache(maxsize=1024)
def _glob_name(word: str) -> str | None:
    if not _glob_blob:
        candidates = [d + n for n in GLOB_NAMES for d in _BIN_DIRS]
        _glob_blob[-1] = "\n".join(candidates)
        for size in {len(c) for c in candidates}:
            _glob_blob[size] = "\n".join(c for c in candidates if len(c) == size)
    rx, size = _glob_regex(word)
    try:
        m = re.search("^(?:" + rx + ")$", _glob_blob.get(size, ""), re.M)
    except re.error:
        return None
    return m.group().rsplit("/", 1)[-1] if m else None


def command_name(word: str) -> str:
    """The command a word names: basename, lower-case, version suffix dropped, globs resolved."""
    if any(ch in word for ch in "*?[") and UNKNOWN not in word:
        resolved = _glob_name(word) if len(word) <= 256 else None
        return resolved or word
    base = word.rsplit("/", 1)[-1].lower()
    if base.endswith(".exe"):
        base = base[:-4]
    m = _VERSIONED.fullmatch(base)
    if m and base.startswith(m.group(1)) and not base.startswith("mkfs."):
        tail = base[len(m.group(1)) :]
        if m.group(1) == "python" and tail.startswith("3"):
            return "python3"
        return m.group(1)
    return base


@dataclass(slots=True)
class Stage:
    """What one command of a pipeline does with its input and output."""

    name: str = ""
    argv: list[str] = field(default_factory=list)
    produces: set[str] = field(default_factory=set)
    text: str | None = None
    consumes: str | None = None
    paths: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Ctx:
    """What the rules know about the command being judged."""

    part: str
    taints: set[str] = field(default_factory=set)
    var_names: set[str] = field(default_factory=set)
    stdin_text: str | None = None
    stdin_taints: set[str] = field(default_factory=set)
    upstream: Stage | None = None
    dynamic_args: bool = False
    via_sudo: bool = False
    fields: list[tuple[str, set[str], str]] = field(default_factory=list)


class Analyzer:
    """Collects findings for one command string (and everything it runs)."""

    def __init__(self, workspace: str | None, cwd: str | None = None) -> None:
        self.workspace = workspace
        self.findings: list[Finding] = []
        self.vars: dict[str, str] = {}
        self.aliases: dict[str, list[str]] = {}
        self.functions: set[str] = set()
        self.downloaded: set[str] = set()
        self.written: dict[str, str] = {}
        self.cwd: str | None = None
        if cwd is not None and (workspace is None or normalize(cwd) != normalize(workspace)):
            self.chdir(cwd)
        self.own_pid_vars: set[str] = set()  # variables holding $! or $$: the command's own processes
        self.socket_open = False
        self.depth = 0

    # -- paths, seen from the directory the command has cd'ed into ------------------------------
    def path(self, raw: str) -> str:
        """``raw`` joined to the directory an earlier ``cd`` moved to (unchanged when there was none)."""
        if self.cwd is None or not raw or raw == "-" or raw.startswith(("/", "~", UNKNOWN)):
            return raw
        if self.cwd.startswith(UNKNOWN):
            return UNKNOWN + "/" + raw
        return posixpath.join(self.cwd, raw)

    def normalize(self, raw: str) -> str:
        return normalize(self.path(raw), self.workspace)

    def deletion_risk(self, raw: str) -> tuple[str, str] | None:
        return deletion_risk(self.path(raw), self.workspace)

    def write_risk(self, raw: str) -> tuple[str, str, str] | None:
        return write_risk(self.path(raw), self.workspace)

    def credential_path(self, raw: str) -> str | None:
        return credential_path(self.path(raw), self.workspace)

    def chdir(self, target: str | None) -> None:
        """Follow ``cd``: later relative paths are judged from ``target`` (``UNKNOWN`` when not static)."""
        if target is None or target == "-" or UNKNOWN in target:
            self.cwd = UNKNOWN
        elif target.startswith(("/", "~")) or self.cwd is None:
            self.cwd = normalize(target) if target.startswith(("/", "~")) else posixpath.normpath(target)
        else:
            self.cwd = (
                self.path(target) if self.cwd.startswith(UNKNOWN) else posixpath.normpath(self.path(target))
            )

    def written_script(self, raw: str) -> str | None:
        """Text this command wrote earlier into the file ``raw`` (a script it may now run)."""
        if not self.written or not raw:
            return None
        return self.written.get(self.normalize(raw))

    # -- findings --------------------------------------------------------------------------------
    def add(self, category: str, part: str, reason: str, hardline: bool = False) -> None:
        part = part.strip().replace(UNKNOWN, "$?")
        if len(part) > 200:
            part = part[:197] + "..."
        finding = Finding(category, part, reason, hardline)
        if finding not in self.findings and len(self.findings) < 64:
            self.findings.append(finding)

    # -- payloads ----------------------------------------------------------------------------------
    def payload(self, text: str, part: str) -> None:
        """Judge ``text`` as a shell script run by the command ``part``."""
        if UNKNOWN in text and not text.replace(UNKNOWN, "").strip():
            return
        if self.depth >= MAX_DEPTH:
            self.add("unparseable", part, f"commands nested more than {MAX_DEPTH} levels deep")
            return
        try:
            script = parse_shell(text.replace(UNKNOWN, "__UNKNOWN__"))
        except ShellSyntaxError as exc:
            self.add("unparseable", part, f"a command payload could not be parsed ({exc})")
            return
        self.depth += 1
        try:
            self.script(script)
        finally:
            self.depth -= 1

    def code(self, text: str, part: str) -> None:
        """Judge inline interpreter code."""
        for category, reason, hardline in code_findings(text):
            self.add(category, part, reason, hardline)
        for snippet in shell_strings(text):
            self.payload(snippet, part)
        quoted = re.findall(r"['\"]([~/][^'\"\s]{2,})['\"]", text)
        for path in quoted:
            if credential_path(path):
                self.add("credential_access", part, f"interpreter code reads the credential file {path}")
        protected_code(self, quoted, part)  # hermes's own state: see _protected

    # -- the walk ----------------------------------------------------------------------------------
    def script(self, script: Script) -> Stage:
        merged = Stage()
        loops: list[bool] = []
        for pipe in script.pipelines:
            first = pipe.commands[0] if pipe.commands else None
            if isinstance(first, Simple):
                head = _LOOP_HEAD.match(first.raw)
                if head is not None:
                    cond = " ".join(w.raw for w in first.words).strip()
                    loops.append(cond in _ALWAYS[head.group(1)])
                elif _LOOP_END.match(first.raw) and loops:
                    loops.pop()
            if pipe.background and any(loops):
                self.add(
                    "fork_bomb",
                    " ".join(_raw(c) for c in pipe.commands),
                    "an endless loop starts background processes without limit",
                    True,
                )
            last = self.pipeline(pipe)
            merged.produces |= last.produces
            merged.consumes = merged.consumes or last.consumes
            if last.text is not None:
                merged.text = (merged.text or "") + last.text
        return merged

    def pipeline(self, pipe: Pipeline) -> Stage:
        stages: list[Stage] = []
        prev: Stage | None = None
        for cmd in pipe.commands:
            stage = self.command(cmd, prev)
            stages.append(stage)
            prev = stage
        if len(stages) > 1:
            self._pipe_rules(stages, pipe)
        return stages[-1] if stages else Stage()

    def command(self, cmd: Simple | Group | FuncDef, upstream: Stage | None) -> Stage:
        if isinstance(cmd, FuncDef):
            self.functions.add(cmd.name)
            if cmd.name and _calls_itself(cmd.body, cmd.name):
                self.add(
                    "fork_bomb", cmd.raw, "a function that starts copies of itself in the background", True
                )
            return self.command(cmd.body, upstream)
        if isinstance(cmd, Group):
            inner = self.script(cmd.body)
            self._redirects(cmd.redirects, cmd.raw, Stage(name="group"))
            return inner
        return self.simple(cmd, upstream)

    def _on_sub(self, script: Script, kind: str) -> SubResult:
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                self.add("unparseable", "$(...)", f"substitutions nested more than {MAX_DEPTH} levels deep")
                return SubResult(None, frozenset({"unknown"}))
            stage = self.script(script)
        finally:
            self.depth -= 1
        taints = set(stage.produces)
        simple = _single_simple(script)
        if simple is not None and simple.words:
            first = simple.words[0].literal()
            name = command_name(first) if first else ""
            taints.add("cmd:" + name)
            if name in ("which", "command", "type") and len(simple.words) >= 2:
                target = simple.words[-1].literal()
                return SubResult(target, frozenset(taints))
        if stage.text is not None and "decode" not in stage.produces:
            return SubResult(stage.text.rstrip("\n"), frozenset(taints))
        return SubResult(None, frozenset(taints))

    def expand(self, word: Word) -> tuple[list[str], bool, set[str], set[str]]:
        exp = expand_word(word, self.vars, self._on_sub)
        return exp.fields, exp.dynamic, exp.taints, exp.var_names

    def simple(self, cmd: Simple, upstream: Stage | None) -> Stage:
        ctx = Ctx(part=cmd.raw, upstream=upstream)
        assigns: dict[str, str] = {}
        argv: list[str] = []
        for index, word in enumerate(cmd.words):
            first = word.pieces[0] if word.pieces else None
            if (
                not argv
                and first is not None
                and first.kind == "lit"
                and not first.quoted
                and (m := _ASSIGN.match(first.text))
            ):
                name = m.group().rstrip("+=").split("[")[0]
                rest = Word([Piece("lit", first.text[m.end() :], True), *word.pieces[1:]], word.raw)
                fields, _dyn, taints, names = self.expand(rest)
                if (names and names <= {"!", "$"}) or fields == [OWN_PID]:
                    self.own_pid_vars.add(name)
                else:
                    self.own_pid_vars.discard(name)
                values = [" ".join(fields)]
                for item in cmd.array_values.get(index, []):
                    values.append(" ".join(self.expand(item)[0]))
                assigns[name] = " ".join(v for v in values if v)
                ctx.taints |= taints
                ctx.var_names |= names
                continue
            fields, dynamic, taints, names = self.expand(word)
            ctx.taints |= taints
            ctx.var_names |= names
            ctx.dynamic_args = ctx.dynamic_args or dynamic
            for f in fields:
                ctx.fields.append((f, names, argv[-1] if argv else ""))
                argv.append(f)
        from ._rules import check_assignments

        check_assignments(self, assigns, ctx)
        stdin = self._stdin(cmd.redirects, ctx)
        ctx.stdin_text = stdin
        if not argv:
            self.vars.update(assigns)
            for name in assigns:
                if name in self.own_pid_vars:
                    self.vars[name] = OWN_PID  # $! or $$ kept: later kills of it stay in its own tree
            stage = Stage(name="")
            self._redirects(cmd.redirects, cmd.raw, stage)
            return stage
        if argv[0] in self.aliases:
            argv = self.aliases[argv[0]] + argv[1:]
        if UNKNOWN in argv[0]:
            names = {n for n in ctx.var_names}
            if not (names and names <= SAFE_DYNAMIC_VARS) or "cmd:" in " ".join(ctx.taints):
                self.add("obfuscation", cmd.raw, "the command name is only known at run time")
        from ._rules import run_argv

        stage = run_argv(self, argv, ctx)
        self._redirects(cmd.redirects, cmd.raw, stage)
        return stage

    def _stdin(self, redirects: list[Redirect], ctx: Ctx) -> str | None:
        text: str | None = None
        for redir in redirects:
            if redir.op in ("<<", "<<-"):
                pieces = redir.heredoc_pieces or [Piece("lit", redir.heredoc or "", True)]
                fields, _dyn, taints, _names = self.expand(Word(pieces, ""))
                ctx.stdin_taints |= taints
                text = "".join(fields) if redir.heredoc_expand else (redir.heredoc or "")
            elif redir.op == "<<<" and redir.target is not None:
                fields, _dyn, taints, _names = self.expand(redir.target)
                ctx.stdin_taints |= taints
                text = " ".join(fields)
            elif redir.op == "<" and redir.target is not None:
                fields, _dyn, taints, _names = self.expand(redir.target)
                ctx.stdin_taints |= taints
                for f in fields:
                    if self.credential_path(f):
                        self.add("credential_access", ctx.part, f"reads the credential file {f}")
                        ctx.stdin_taints.add("cred")
                    if f in self.downloaded:
                        ctx.stdin_taints.add("download")
                    if f.startswith(("/dev/tcp/", "/dev/udp/")):
                        ctx.stdin_taints.add("netin")
        return text

    def _redirects(self, redirects: list[Redirect], part: str, stage: Stage) -> None:
        for redir in redirects:
            if redir.target is None or redir.op in ("<<", "<<-", "<<<", "<"):
                continue
            if redir.op in (">&", "<&") and self._dup_to_socket(redir, stage, part):
                continue
            if redir.op in (">&", "<&") and (redir.target.literal() or "").rstrip("-").isdigit():
                continue
            fields, _dyn, _taints, _names = self.expand(redir.target)
            for target in fields:
                if target.startswith(("/dev/tcp/", "/dev/udp/")):
                    self.socket_open = True
                    if stage.name in SHELLS or stage.name in INTERPRETERS or stage.consumes == "shell":
                        self.add("reverse_shell", part, f"connects a shell to {target}", True)
                    else:
                        self.add("exfiltration", part, f"sends output to the network socket {target}", True)
                    continue
                if stage.produces & {"download"}:
                    self.downloaded.add(target)
                if stage.text is not None and len(self.written) < _MAX_WRITTEN:
                    key = self.normalize(target)
                    self.written[key] = (self.written.get(key, "") if redir.op == ">>" else "") + stage.text
                risk = self.write_risk(target)
                if risk is not None:
                    level, category, what = risk
                    if category == "history_wipe" and redir.op == ">>":
                        continue  # appending adds to a history or log file, it does not wipe it
                    if category == "history_wipe" or (
                        stage.name in ("", "echo", "printf", "cat", "true", ":") and "history" in what
                    ):
                        self.add("history_wipe", part, f"overwrites {what}", False)
                    else:
                        self.add(category, part, f"redirects output into {what}", level == "hardline")

    def _dup_to_socket(self, redir: Redirect, stage: Stage, part: str) -> bool:
        """A shell's input or output duplicated onto a descriptor after a socket was opened: a reverse shell."""
        if redir.target is None or not self.socket_open:
            return False
        if stage.name not in SHELLS and stage.name not in INTERPRETERS:
            return False
        lit = redir.target.literal()
        if lit is not None and lit.rstrip("-") in ("0", "1", "2", ""):
            return False
        self.add("reverse_shell", part, "wires a shell to a network socket opened earlier", True)
        return True

    def _pipe_rules(self, stages: list[Stage], pipe: Pipeline) -> None:
        part = " | ".join(_raw(c) for c in pipe.commands)
        produced: set[str] = set()
        texts: list[str] = []
        for stage in stages:
            if stage.consumes in ("shell", "interp"):
                what = "a shell" if stage.consumes == "shell" else "an interpreter"
                if "download" in produced:
                    self.add("remote_code_execution", part, f"downloaded content is piped into {what}")
                if "decode" in produced:
                    self.add("runtime_code", part, f"decoded or generated text is piped into {what}")
                if "netin" in produced or stage.produces & {"netin"}:
                    self.add("reverse_shell", part, f"network input is piped into {what}", True)
                for text in texts:
                    if stage.consumes == "shell":
                        self.payload(text, part)
                    else:
                        self.code(text, part)
            if (
                stage.name in SENDERS and stage.name not in DOWNLOADERS | NET_TOOLS
            ) or stage.consumes == "network":
                if "env" in produced:
                    self.add("exfiltration", part, "the environment is sent over the network", True)
                if "cred" in produced:
                    self.add("exfiltration", part, "a credential file is sent over the network", True)
                if stage.name in NET_TOOLS and any(s.consumes == "shell" for s in stages):
                    self.add("reverse_shell", part, "a shell is wired to a network connection", True)
            if stage.consumes == "db":
                for text in texts:
                    stmt = sql_findings(text)
                    if stmt:
                        self.add(
                            "database_drop", part, f"pipes a destructive statement ({stmt}) to a database"
                        )
            if stage.consumes == "crontab" and (produced or texts):
                self.add("crontab", part, "replaces the crontab with piped text")
            produced |= stage.produces
            if stage.text is not None:
                texts.append(stage.text)


def _raw(cmd: Simple | Group | FuncDef) -> str:
    return cmd.raw.strip()


def _single_simple(script: Script) -> Simple | None:
    if len(script.pipelines) == 1 and len(script.pipelines[0].commands) == 1:
        cmd = script.pipelines[0].commands[0]
        if isinstance(cmd, Simple):
            return cmd
    return None


def _calls_itself(body: Simple | Group | FuncDef, name: str) -> bool:
    """Whether a function body runs ``name`` in a pipeline or in the background (a fork bomb shape)."""

    def walk(node: Simple | Group | FuncDef, risky: bool) -> bool:
        if isinstance(node, Simple):
            lit = node.words[0].literal() if node.words else None
            return risky and lit == name
        if isinstance(node, FuncDef):
            return walk(node.body, risky)
        for pipe in node.body.pipelines:
            branch = risky or pipe.background or len(pipe.commands) > 1
            if any(walk(c, branch) for c in pipe.commands):
                return True
        return False

    return walk(body, False)


def parse_or_none(text: str) -> Script | None:
    try:
        return parse_shell(text)
    except ShellSyntaxError:
        return None
