"""Per-command rules of the command guard: peel wrappers off an argv, then judge the real command."""

from __future__ import annotations

import re
from collections.abc import Callable

from ._analyze import (
    AWKS,
    DB_CLIENTS,
    DOWNLOADERS,
    ENV_SETUP_TOOLS,
    INTERPRETERS,
    NET_TOOLS,
    OWN_PID,
    SENDERS,
    SHELLS,
    Analyzer,
    Ctx,
    Stage,
    command_name,
    register_glob_names,
)
from ._code import sql_findings
from ._protected import command_findings
from ._shell import decode_ansi_c
from ._targets import UNKNOWN, is_inside, normalize, secret_file

__all__ = ["check_assignments", "run_argv"]

Rule = Callable[[Analyzer, list[str], Ctx, Stage], None]
_RULES: dict[str, Rule] = {}


def rule(*names: str) -> Callable[[Rule], Rule]:
    def deco(fn: Rule) -> Rule:
        for n in names:
            _RULES[n] = fn
        register_glob_names(names)
        return fn

    return deco


# -- wrappers ---------------------------------------------------------------------------------------------
# option letters that take a value, per wrapper
_WRAP_OPTS: dict[str, str] = {
    "sudo": "ugCDhprtUTP",
    "doas": "uC",
    "nice": "n",
    "ionice": "cnpt",
    "stdbuf": "ioe",
    "timeout": "sk",
    "chrt": "",
    "taskset": "",
    "setsid": "",
    "nohup": "",
    "time": "fo",
    "builtin": "",
    "exec": "a",
    "command": "",
    "unbuffer": "",
    "caffeinate": "tw",
    "xvfb-run": "nsfe",
    "proxychains": "f",
    "proxychains4": "f",
    "torsocks": "",
    "eatmydata": "",
    "fakeroot": "",
    "catchsegv": "",
    "strace": "oepsEuIXabP",
    "ltrace": "oepsEu",
    "systemd-run": "puEM",
    "runuser": "ugs",
    "pkexec": "",
    "run0": "u",
    "firejail": "",
    "nsenter": "tSGw",
    "unshare": "S",
    "flock": "wEn",
    "chroot": "",
    "busybox": "",
    "toybox": "",
    "sg": "",
    "then": "",
    "do": "",
    "else": "",
    "gtimeout": "sk",
    "gnice": "n",
    "screen": "ScehpTtsX",
}


_RUNNERS = frozenset(
    {
        "bundle",
        "poetry",
        "uv",
        "pipenv",
        "pdm",
        "hatch",
        "pnpm",
        "yarn",
        "npm",
        "bun",
        "rye",
        "conda",
        "mamba",
        "micromamba",
    }
)


def _strip_options(argv: list[str], takes_value: str, long_values: tuple[str, ...] = ()) -> list[str]:
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return argv[i + 1 :]
        if a.startswith("--"):
            i += 1
            if "=" not in a and a[2:] in long_values:
                i += 1
            continue
        if a.startswith("-") and len(a) > 1 and not a[1:].isdigit():
            letters = a[1:]
            for k, ch in enumerate(letters):
                if ch in takes_value:
                    if k == len(letters) - 1:
                        i += 1
                    break
            i += 1
            continue
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", a):
            i += 1
            continue
        return argv[i:]
    return []


def _opt_value(argv: list[str], letter: str, longs: tuple[str, ...] = ()) -> str | None:
    """The value of option ``-<letter>`` (also inside combined flags such as ``-qc``) or of a long option."""
    for k, a in enumerate(argv[1:], start=1):
        if a == "--":
            break
        nxt = argv[k + 1] if k + 1 < len(argv) else ""
        if a.startswith("--"):
            name, eq, val = a[2:].partition("=")
            if name in longs:
                return val if eq else nxt
        elif a.startswith("-") and len(a) > 1 and letter in a[1:]:
            tail = a[1:].split(letter, 1)[1]
            return tail or nxt
    return None


def _unwrap(az: Analyzer, argv: list[str], ctx: Ctx) -> list[str] | None:
    """Peel wrappers off ``argv``; None when nothing is executed (``command -v x``)."""
    for _ in range(32):
        if not argv:
            return None
        name = command_name(argv[0])
        if name == "env":
            rest = argv[1:]
            i = 0
            while i < len(rest):
                a = rest[i]
                if a in ("-S", "--split-string") and i + 1 < len(rest):
                    argv = ["__payload__", rest[i + 1], *rest[i + 2 :]]
                    break
                if a.startswith("-S") and len(a) > 2:
                    argv = ["__payload__", a[2:], *rest[i + 1 :]]
                    break
                if a in ("-u", "--unset", "-C", "--chdir"):
                    i += 2
                    continue
                if a.startswith("-") or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", a):
                    if "=" in a and not a.startswith("-"):
                        check_assignments(az, dict([a.split("=", 1)]), ctx)
                    i += 1
                    continue
                argv = rest[i:]
                break
            else:
                return ["env"]
            if argv and argv[0] == "__payload__":
                az.payload(" ".join(argv[1:]), ctx.part)
                return None
            continue
        if name in ("sudo", "doas", "pkexec", "run0", "su") and name != "su":
            rest = _strip_options(argv, _WRAP_OPTS.get(name, ""), ("user", "group", "prompt", "chdir"))
            shell_flags = {
                a for a in argv[1 : len(argv) - len(rest)] if a.startswith("-") and not a.startswith("--")
            }
            interactive = (
                any(("i" in f or "s" in f) for f in shell_flags) or "--login" in argv or "--shell" in argv
            )
            if not rest:
                if interactive:
                    az.add("privilege_escalation", ctx.part, "opens an interactive root shell")
                return None
            ctx.via_sudo = True
            for a in argv[1 : len(argv) - len(rest)]:
                if re.match(r"LD_(PRELOAD|LIBRARY_PATH)=", a):
                    az.add("privilege_escalation", ctx.part, "preloads a library into a privileged command")
            argv = rest
            continue
        if name == "timeout" or name == "gtimeout":
            rest = _strip_options(argv, "sk", ("signal", "kill-after"))
            argv = rest[1:] if rest else []
            continue
        if name in ("chrt", "taskset"):
            rest = _strip_options(argv, "")
            argv = rest[1:] if rest else []
            continue
        if name in ("chroot", "flock", "sg") and len(argv) > 1:
            rest = _strip_options(argv, _WRAP_OPTS.get(name, ""))
            command = _opt_value(argv, "c", ("command",)) if name == "flock" else None
            if command is not None:
                az.payload(command, ctx.part)
                return None
            if name == "sg" and len(rest) >= 2:
                az.payload(" ".join(rest[1:]), ctx.part)
                return None
            argv = rest[1:] if rest else []
            continue
        if name == "command" and len(argv) > 1 and argv[1] in ("-v", "-V"):
            return None
        if name == "nsenter" and re.search(r"(-t|--target)[= ]?1\b", " ".join(argv)):
            az.add("privilege_escalation", ctx.part, "enters the namespaces of PID 1 (the host)")
        if name in ("busybox", "toybox") and len(argv) > 1 and argv[1].startswith("-"):
            return argv
        if name in ("watch", "script"):
            rest = _strip_options(argv, "nd" if name == "watch" else "cqEoTIOB")
            command = _opt_value(argv, "c", ("command",)) if name == "script" else None
            if command is not None:
                az.payload(command, ctx.part)
                return None
            if name == "watch" and rest:
                az.payload(" ".join(rest), ctx.part)
                return None
            return argv
        if name in ("npx", "bunx", "pnpx") and len(argv) > 1:
            argv = _strip_options(argv, "p", ("package",))
            continue
        if name in _RUNNERS and len(argv) > 2 and argv[1] in ("exec", "run", "x", "dlx"):
            argv = _strip_options(argv[1:], "")
            continue
        if name in _WRAP_OPTS:
            argv = _strip_options(
                argv, _WRAP_OPTS[name], ("adjustment", "class", "classdata", "output", "user")
            )
            continue
        return argv
    return argv


# -- dispatch ---------------------------------------------------------------------------------------------
def run_argv(az: Analyzer, argv: list[str], ctx: Ctx) -> Stage:
    """Judge one expanded argv (wrappers included) and say what it does in a pipeline."""
    core = _unwrap(az, argv, ctx)
    if not core:
        return Stage()
    name = command_name(core[0])
    if name != core[0] and any(ch in core[0] for ch in "*?[") and name in _RULES:
        core = [name, *core[1:]]  # a globbed name (/usr/sbin/shut??wn): rules see the command it resolves to
    stage = Stage(name=name, argv=core)
    if len(core) == 2 and core[1] in ("--help", "--version"):
        return stage  # prints its usage or version and exits
    if UNKNOWN in core[0] and name not in _RULES:
        return stage
    written = az.written_script(core[0])
    if written is not None:
        az.payload(written, ctx.part)
    if name in az.functions:
        return stage
    if core[0] in az.downloaded or (
        core[0].startswith(("/", "./", "~")) and normalize(core[0]) in {normalize(d) for d in az.downloaded}
    ):
        az.add("remote_code_execution", ctx.part, f"runs {core[0]}, downloaded earlier in the same command")
    fn = _RULES.get(name)
    if fn is not None:
        fn(az, core, ctx, stage)
    elif name.startswith("mkfs") or name.startswith("mke2fs") or name.startswith("newfs"):
        _disk_format(az, core, ctx, stage)
    _credential_reads(az, name, core, ctx, stage)
    command_findings(az, name, core, ctx)  # hermes's own config, data, plugins: see _protected
    _secret_printers(name, core, stage)
    _sender_args(az, name, core, ctx, stage)
    if ctx.upstream is not None and "pids" in ctx.upstream.produces and _passes_pids(name, core):
        stage.produces.add("pids")
    return stage


def _passes_pids(name: str, argv: list[str]) -> bool:
    """Whether a filter stage hands on every process id it reads (it selects none of them)."""
    prog = " ".join(argv[1:])
    if name in AWKS:
        return not re.search(r"/[^/]+/|~|==|!=|\bif\b|index\(|match\(", prog)
    if name == "sed":
        return "-n" not in argv and not re.search(r"/[^/]*/\s*[dp]", prog)
    return name in ("cut", "tr", "tail", "head", "sort", "uniq", "column", "cat", "tee")


def _secret_printers(name: str, argv: list[str], stage: Stage) -> None:
    """Commands that print secret key material: their output is a credential."""
    joined = " ".join(argv[1:])
    if (
        (name in ("gpg", "gpg2") and re.search(r"--export-secret-(sub)?keys", joined))
        or (name == "security" and re.search(r"find-(generic|internet)-password\b.*\s-[gw]\b", joined))
        or (name in ("kubectl", "oc") and re.search(r"\bget\s+secrets?\b.*(-o|--output)", joined))
    ):
        stage.produces.add("cred")


def _args(argv: list[str]) -> list[str]:
    return [a for a in argv[1:] if not a.startswith("-") or a == "-"]


def _flags(argv: list[str]) -> str:
    """All single-letter flags of ``argv`` (``-rf -v`` -> ``rfv``), long flags as ``|name|``."""
    out = []
    for a in argv[1:]:
        if a == "--":
            break
        if a.startswith("--"):
            out.append("|" + a[2:].split("=")[0] + "|")
        elif a.startswith("-") and len(a) > 1:
            out.append(a[1:])
    return "".join(out)


_READERS = frozenset(
    {
        "cat", "tac", "less", "more", "head", "tail", "strings", "xxd", "od", "hexdump", "base64", "base32",
        "nl", "cut", "sed", "grep", "egrep", "rg", "cp", "scp", "rsync", "tar", "zip", "7z", "gzip", "bzip2",
        "xz", "bat", "batcat", "openssl", "gpg", "uuencode", "awk", "sort", "uniq", "paste", "jq", "yq", "dd",
        "sqlite3", "python", "python3", "perl", "ruby", "node", "vim", "vi", "nano", "view", "mail", "sendmail",
        "install", "ln", "mv", "pv", "tee", "iconv", "fold", "column", "rev", "wc",
    } | DOWNLOADERS | NET_TOOLS
)  # fmt: skip


def _credential_reads(az: Analyzer, name: str, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    if name not in _READERS:
        return
    for a in argv[1:]:
        for candidate in (a, a.split("=", 1)[-1], a.lstrip("@<")):
            path = az.credential_path(candidate)
            if path:
                az.add("credential_access", ctx.part, f"reads the credential store {path}")
                stage.produces.add("cred")
                break
            if secret_file(candidate):
                stage.produces.add("cred")  # reading it is fine; sending it over the network is not
                break


_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASS|PASSWD|PASSWORD|CRED|AUTH|PRIVATE|SESSION|COOKIE)", re.I)


def _sender_args(az: Analyzer, name: str, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    if name not in SENDERS and name not in ("dig", "nslookup", "host", "ping"):
        return
    if ctx.taints & {"env", "cred"}:
        az.add("exfiltration", ctx.part, "sends the environment or a credential over the network", True)
    secret_vars = {v for v in ctx.var_names if _SECRET_NAME.search(v)}
    if secret_vars and name in DOWNLOADERS:
        exposed = {
            v
            for k, (_text, names, prev) in enumerate(ctx.fields)
            for v in names
            if _SECRET_NAME.search(v)
            and prev not in ("-H", "--header", "-u", "--user", "--oauth2-bearer")
            and k > 0
        }
        if exposed:
            az.add(
                "exfiltration",
                ctx.part,
                f"sends secret variables ({', '.join(sorted(exposed))}) in a URL or body",
            )
    elif secret_vars and name in frozenset({"dig", "nslookup", "host", "ping"}) | NET_TOOLS:
        az.add("exfiltration", ctx.part, "sends secret variables over the network")


# -- assignments ----------------------------------------------------------------------------------------
def check_assignments(az: Analyzer, assigns: dict[str, str], ctx: Ctx) -> None:
    for name, value in assigns.items():
        if name in ("HISTFILE",) and value in ("/dev/null", "", UNKNOWN):
            az.add("history_wipe", ctx.part, "turns shell history off")
        if name in ("HISTSIZE", "HISTFILESIZE", "SAVEHIST") and value.strip() in ("0", ""):
            az.add("history_wipe", ctx.part, "turns shell history off")
        if name in ("LD_PRELOAD", "LD_LIBRARY_PATH") and ctx.via_sudo:
            az.add("privilege_escalation", ctx.part, f"preloads a library ({name}) into a privileged command")
        if name == "PROMPT_COMMAND" and value:
            az.payload(value, ctx.part)
        if name == "HISTCONTROL" and "ignorespace" in value and "ignoredups" not in value:
            pass


# -- rules ------------------------------------------------------------------------------------------------
@rule("echo", "printf")
def _echo(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    args = argv[1:]
    escapes = False
    if argv[0].endswith("printf"):
        if args and args[0] == "-v":
            args = args[2:]
        fmt = args[0] if args else ""
        escapes = "\\" in fmt
        text = decode_ansi_c(
            fmt.replace("%s", " ".join(args[1:]) if len(args) > 1 else "").replace("%b", " ".join(args[1:]))
        )
        if len(args) > 1 and "%" not in fmt:
            text = decode_ansi_c(fmt)
        for a in args[1:]:
            if "\\" in a:
                escapes = True
    else:
        opts = ""
        while args and re.fullmatch(r"-[neE]+", args[0]):
            opts += args[0]
            args = args[1:]
        text = " ".join(args)
        if "e" in opts:
            escapes = "\\" in text
            text = decode_ansi_c(text)
        text += "\n"
    if UNKNOWN in text:
        stage.produces.add("decode" if ctx.taints & {"decode", "download"} else "dynamic")
        if ctx.taints & {"download"}:
            stage.produces.add("download")
        if ctx.taints & {"env"}:
            stage.produces.add("env")
    if escapes and re.search(r"\\(x[0-9a-fA-F]|[0-7]{3}|u[0-9a-fA-F]{4})", " ".join(argv[1:])):
        stage.produces.add("decode")
    stage.text = text


@rule("cat", "tac", "head", "tail", "less", "more", "bat", "batcat")
def _cat(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    files = [a for a in _args(argv) if a != "-"]
    if ctx.stdin_text is not None and not files:
        stage.text = ctx.stdin_text
        if ctx.stdin_taints & {"download", "decode"}:
            stage.produces |= ctx.stdin_taints & {"download", "decode"}
    for f in files:
        path = normalize(f, None)
        if re.fullmatch(r"/proc/[^/]+/environ", path):
            stage.produces.add("env")
        if f in az.downloaded:
            stage.produces.add("download")


@rule("env", "printenv")
def _env(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    if len(argv) == 1:
        stage.produces.add("env")


@rule("set", "export", "declare", "typeset", "local", "readonly", "compgen")
def _set(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    args = argv[1:]
    if not args or args in (["-p"], ["-x"], ["-v"], ["-xp"]):
        stage.produces.add("env")
        return
    if argv[0] == "set" and "+o" in args and "history" in args:
        az.add("history_wipe", ctx.part, "turns shell history off")
    assigns: dict[str, str] = {}
    for a in args:
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", a, re.S):
            k, v = a.split("=", 1)
            assigns[k] = v
    az.vars.update(assigns)
    check_assignments(az, assigns, ctx)


@rule("unset")
def _unset(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    if "HISTFILE" in argv[1:]:
        az.add("history_wipe", ctx.part, "turns shell history off")
    for a in argv[1:]:
        az.vars.pop(a, None)


@rule("history")
def _history(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    flags = _flags(argv)
    if "c" in flags or ("w" in flags and "/dev/null" in argv):
        az.add("history_wipe", ctx.part, "clears the shell history")


@rule("alias")
def _alias(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    from ._analyze import parse_or_none

    for a in argv[1:]:
        if "=" not in a:
            continue
        key, value = a.split("=", 1)
        script = parse_or_none(value)
        words: list[str] = []
        if script is not None and script.pipelines and script.pipelines[0].commands:
            first = script.pipelines[0].commands[0]
            for w in getattr(first, "words", []):
                words.extend(az.expand(w)[0])
        az.aliases[key] = words or [value]
        az.payload(value, ctx.part)


@rule("eval")
def _eval(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    text = " ".join(argv[1:])
    cmds = {t[4:] for t in ctx.taints if t.startswith("cmd:")}
    if ctx.taints & {"download"}:
        az.add("remote_code_execution", ctx.part, "evaluates downloaded text")
    elif ctx.taints & {"decode"}:
        az.add("runtime_code", ctx.part, "evaluates decoded text")
    elif UNKNOWN in text and not (cmds and cmds <= ENV_SETUP_TOOLS):
        az.add("runtime_code", ctx.part, "evaluates text that is only known at run time")
    az.payload(text, ctx.part)


@rule("source", ".")
def _source(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    args = argv[1:]
    if not args:
        return
    target = args[0]
    if target in ("/dev/stdin", "-", "/proc/self/fd/0", "/dev/fd/0"):
        stage.consumes = "shell"
        if ctx.stdin_text is not None:
            az.payload(ctx.stdin_text, ctx.part)
    elif ctx.taints & {"psub"}:
        if ctx.taints & {"download"}:
            az.add("remote_code_execution", ctx.part, "sources a downloaded script")
        elif ctx.taints & {"decode"}:
            az.add("runtime_code", ctx.part, "sources decoded text")
        elif not ({t[4:] for t in ctx.taints if t.startswith("cmd:")} <= ENV_SETUP_TOOLS):
            az.add("runtime_code", ctx.part, "sources the output of a command")
    elif target in az.downloaded or normalize(target) in {normalize(d) for d in az.downloaded}:
        az.add("remote_code_execution", ctx.part, f"sources {target}, downloaded earlier in the same command")


def _shell_like(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage, lang: str) -> None:
    args = argv[1:]
    payload: str | None = None
    script_arg: str | None = None
    code_flags = {
        "shell": "c",
        "python": "c",
        "perl": "eE",
        "ruby": "e",
        "node": "ep",
        "php": "rR",
        "lua": "e",
    }
    cflags = code_flags.get(lang, "ce")
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--eval", "--print", "--command", "--exec") and i + 1 < len(args):
            payload = args[i + 1]
            break
        if a.startswith("-") and len(a) > 1 and not a.startswith("--") and lang != "shell":
            letters = a[1:]
            value_opts = {
                "ruby": "rIECTWx",
                "perl": "MImIdDCx",
                "python": "WXQ",
                "node": "r",
                "php": "cdz",
                "lua": "l",
            }
            found_code = False
            for k, ch in enumerate(letters):
                if ch in value_opts.get(lang, ""):
                    if k == len(letters) - 1:
                        i += 1
                    break
                if ch in cflags:
                    rest_letters = letters[k + 1 :]
                    payload = rest_letters if rest_letters else (args[i + 1] if i + 1 < len(args) else "")
                    found_code = True
                    break
                if lang == "python" and ch == "m":
                    script_arg = "-m " + (letters[k + 1 :] or (args[i + 1] if i + 1 < len(args) else ""))
                    found_code = True
                    break
            if found_code:
                break
            i += 1
            continue
        if a.startswith("-") and len(a) > 1 and not a.startswith("--"):
            letters = a[1:]
            if any(ch in cflags for ch in letters):
                joined = letters.split(next(ch for ch in letters if ch in cflags), 1)[1]
                payload = joined if joined and lang != "shell" else (args[i + 1] if i + 1 < len(args) else "")
                break
            if lang == "python" and letters in ("m",):
                script_arg = "-m " + (args[i + 1] if i + 1 < len(args) else "")
                break
            if lang == "shell" and letters.rstrip("io") in (
                "",
                "s",
                "l",
                "x",
                "e",
                "v",
                "u",
                "lx",
                "xe",
                "ex",
            ):
                i += 1
                if lang == "shell" and "o" in letters and i < len(args):
                    i += 1
                continue
            i += 1
            if lang == "perl" and letters.startswith(("M", "I")):
                continue
            continue
        if a.startswith("--"):
            i += 1
            continue
        script_arg = a
        break
    if payload is not None:
        if ctx.taints & {"download"}:
            az.add("remote_code_execution", ctx.part, "runs downloaded text as code")
        elif ctx.taints & {"decode"}:
            az.add("runtime_code", ctx.part, "runs decoded text as code")
        elif UNKNOWN in payload and ctx.taints & {"dynamic", "unknown"}:
            az.add("runtime_code", ctx.part, "runs text that is only known at run time")
        if lang == "shell":
            az.payload(payload, ctx.part)
        else:
            az.code(payload, ctx.part)
        return
    if script_arg is None and ctx.via_sudo and ctx.stdin_text is None and ctx.upstream is None:
        az.add("privilege_escalation", ctx.part, "opens an interactive shell or interpreter as root")
    if script_arg is None or script_arg in ("-", "/dev/stdin", "/proc/self/fd/0"):
        stage.consumes = "shell" if lang == "shell" else "interp"
        if ctx.stdin_text is not None:
            if ctx.stdin_taints & {"download"}:
                az.add("remote_code_execution", ctx.part, "feeds downloaded text to a shell or interpreter")
            elif ctx.stdin_taints & {"decode"}:
                az.add("runtime_code", ctx.part, "feeds decoded text to a shell or interpreter")
            if lang == "shell":
                az.payload(ctx.stdin_text, ctx.part)
            else:
                az.code(ctx.stdin_text, ctx.part)
        if ctx.stdin_taints & {"download"} and ctx.stdin_text is None:
            az.add("remote_code_execution", ctx.part, "runs a downloaded file")
        if ctx.stdin_taints & {"netin"}:
            az.add("reverse_shell", ctx.part, "reads commands from a network socket", True)
        return
    if script_arg.startswith("/dev/fd/") and ctx.taints & {"psub"}:
        if ctx.taints & {"download"}:
            az.add("remote_code_execution", ctx.part, "runs a downloaded script through process substitution")
        else:
            az.add("runtime_code", ctx.part, "runs the output of a command as a script")
        return
    written = az.written_script(script_arg)
    if written is not None:
        if lang == "shell":
            az.payload(written, ctx.part)
        else:
            az.code(written, ctx.part)
    if script_arg.rsplit("/", 1)[-1] in ("manage.py", "artisan"):
        _database(az, [script_arg.rsplit("/", 1)[-1], *args[args.index(script_arg) + 1 :]], ctx, stage)
    if script_arg in az.downloaded or normalize(script_arg) in {normalize(d) for d in az.downloaded}:
        az.add(
            "remote_code_execution", ctx.part, f"runs {script_arg}, downloaded earlier in the same command"
        )


@rule(*SHELLS)
def _shell(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    _shell_like(az, argv, ctx, stage, "shell")


@rule(*INTERPRETERS)
def _interp(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    name = command_name(argv[0])
    lang = {"python3": "python", "python2": "python", "pypy": "python", "pypy3": "python", "nodejs": "node",
            "deno": "node", "bun": "node", "luajit": "lua", "irb": "ruby"}.get(name, name)  # fmt: skip
    if name == "deno" and len(argv) > 2 and argv[1] == "eval":
        az.code(argv[2], ctx.part)
        return
    _shell_like(az, argv, ctx, stage, lang)
    if (
        lang == "python"
        and len(argv) > 2
        and argv[1] == "-c"
        and re.search(r"b64decode|decode\(", argv[2])
        and re.search(r"print|write", argv[2])
    ):
        stage.produces.add("decode")


@rule(*AWKS)
def _awk(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    prog = next((a for a in argv[1:] if not a.startswith("-")), "")
    az.code(prog, ctx.part)


@rule("su")
def _su(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    command = _opt_value(argv, "c", ("command",))
    if command is not None:
        az.payload(command, ctx.part)
        return
    az.add("privilege_escalation", ctx.part, "switches to another user (root by default)")


@rule("ssh")
def _ssh(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    rest = _strip_options(argv, "bcDEeFIiJLlmOopQRSWw")
    if len(rest) > 1:
        az.payload(" ".join(rest[1:]), ctx.part)
    stage.consumes = "network"


_XARGS_ITEMS = 8


@rule("xargs")
def _xargs(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    # -0/--null (NUL-separated input) is a flag; drop it so the command after the options is found
    opts = [argv[0]]
    for k, a in enumerate(argv[1:], start=1):
        if not a.startswith("-"):
            opts.extend(argv[k:])
            break
        if a in ("-0", "--null"):
            continue
        opts.append(a.replace("0", "") if re.fullmatch(r"-[0rtx]+", a) else a)
    rest = _strip_options(opts, "adEeIiLlnPs", ("arg-file", "delimiter", "max-args", "max-procs", "replace"))
    inner = rest or ["echo"]
    replace = _opt_value(opts, "I", ("replace",)) or _opt_value(opts, "i")
    text: str | None = None
    up = ctx.upstream
    if ctx.stdin_text is not None:
        text = ctx.stdin_text
    elif up is not None and up.text is not None:
        text = up.text
    if text is not None:
        # with -I every input line is one item; otherwise items are blank-separated words
        items = (
            [ln for ln in text.replace("\0", "\n").splitlines() if ln.strip()] if replace else text.split()
        )
    else:
        items = list(up.paths) if up is not None else []
    taints = set(ctx.taints) | ({"pids"} if up is not None and "pids" in up.produces else set()) | {"xargs"}
    runs = [[a.replace(replace, item) for a in inner] for item in items[:_XARGS_ITEMS]] if replace else []
    if not runs:
        runs = [[a.replace(replace, UNKNOWN) for a in inner] if replace else inner + items]
    sub = Stage()
    for run in runs:
        sub = run_argv(az, run, Ctx(part=ctx.part, taints=set(taints), var_names=set(ctx.var_names)))
    stage.produces |= sub.produces
    stage.consumes = sub.consumes
    if sub.name in ("rm", "shred", "unlink", "chmod", "chown") and up is not None and up.name == "find":
        _find_delete_roots(az, up.paths, ctx, f"find | xargs {sub.name}")


def _find_delete_roots(az: Analyzer, roots: list[str], ctx: Ctx, what: str) -> None:
    for root in roots or ["."]:
        risk = az.deletion_risk(root)
        if risk is not None:
            az.add("find_delete", ctx.part, f"{what} over {risk[1]}", risk[0] == "hardline")
            continue
        path = az.normalize(root)
        if (
            path.startswith(("/", "~"))
            and not (
                (az.workspace and is_inside(path, az.workspace))
                or is_inside(path, "/tmp")
                or is_inside(path, "/var/tmp")
            )
        ) or path.startswith(".."):
            az.add("find_delete", ctx.part, f"{what} outside the workspace ({root})")


_DESTRUCTIVE_EXEC = frozenset(
    {"rm", "shred", "unlink", "rmdir", "truncate", "dd", "wipe", "srm", "mv", "chmod", "chown"}
)


@rule("find", "gfind", "fd", "fdfind")
def _find(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    args = argv[1:]
    roots: list[str] = []
    i = 0
    while (i < len(args) and args[i] in ("-H", "-L", "-P")) or (i < len(args) and args[i].startswith("-O")):
        i += 1
    while i < len(args) and not args[i].startswith(("-", "(", "!", "\\(")):
        roots.append(args[i])
        i += 1
    if argv[0] in ("fd", "fdfind"):
        roots = [a for a in args[1:2] if not a.startswith("-")]
    stage.paths = roots or ["."]
    stage.produces.add("find")
    destructive = False
    k = i
    while k < len(args):
        a = args[k]
        if a in ("-delete",):
            destructive = True
        if a in ("-exec", "-execdir", "-ok", "-okdir", "-x", "--exec", "-X", "--exec-batch"):
            end = k + 1
            while end < len(args) and args[end] not in (";", "+", "\\;"):
                end += 1
            cmd = list(args[k + 1 : end])
            if cmd:
                sub = run_argv(az, cmd, Ctx(part=ctx.part, taints=set(ctx.taints)))
                if sub.name in _DESTRUCTIVE_EXEC:
                    destructive = True
            k = end
        k += 1
    if destructive:
        _find_delete_roots(az, roots, ctx, "find deletes or rewrites files")


@rule("ls", "tree")
def _ls(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    stage.paths = [a.rstrip("/") + "/*" for a in _args(argv)]


@rule("rm", "unlink", "rmdir", "srm", "wipe", "trash", "gio")
def _rm(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    flags = _flags(argv)
    recursive = bool(re.search(r"[rR]|\|recursive\|", flags)) or argv[0] in ("srm", "wipe")
    if "|no-preserve-root|" in flags:
        az.add("recursive_delete", ctx.part, "deletes with --no-preserve-root", True)
    targets = [a for a in argv[1:] if not a.startswith("-") or a == "-"]
    if "--" in argv:
        targets = argv[argv.index("--") + 1 :]
    for t in targets:
        risk = az.deletion_risk(t)
        if risk is not None and (recursive or risk[1].startswith("system path") or "*" in t):
            level, what = risk
            hard = level == "hardline" and (recursive or "*" in t)
            az.add("recursive_delete", ctx.part, f"deletes {what}", hard)
            continue
        wr = az.write_risk(t)
        if wr is not None:
            az.add(wr[1] if wr[1] != "reverse_shell" else "system_file_write", ctx.part, f"deletes {wr[2]}")


@rule("shred", "wipefs", "blkdiscard", "badblocks", "hdparm", "sgdisk", "sfdisk", "parted", "fdisk", "gdisk", "cfdisk",
      "cryptsetup", "mkswap", "zpool", "lvremove", "vgremove", "pvremove", "mdadm", "flashrom", "nvme", "dmsetup",
      "diskutil", "format", "zfs")  # fmt: skip
def _disk(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    name = argv[0].rsplit("/", 1)[-1]
    args = " ".join(argv[1:])
    targets = _args(argv)
    device = [t for t in targets if (wr := az.write_risk(t)) and wr[1] == "disk_destruction"]
    if name == "shred":
        for t in targets:
            wr = az.write_risk(t)
            dr = az.deletion_risk(t)
            if wr or dr or az.credential_path(t):
                az.add("disk_destruction", ctx.part, f"shreds {t}", bool(device))
        return
    if name in ("fdisk", "gdisk", "cfdisk") and re.search(r"(^|\s)-l\b|--list", args):
        return
    if (
        name in ("parted",)
        and re.search(r"\bprint\b|-l\b|--list", args)
        and not re.search(r"mklabel|rm\b|mkpart", args)
    ):
        return
    if name == "hdparm" and not re.search(
        r"security-erase|--trim-sector|--write-sector|--dco-restore|--make-bad", args
    ):
        return
    if name == "nvme" and not re.search(r"\b(format|sanitize|delete-ns|detach-ns)\b", args):
        return
    if name == "cryptsetup" and not re.search(r"luksFormat|erase|luksErase|reencrypt", args):
        return
    if name == "zpool" and not re.search(r"\b(destroy|labelclear)\b", args):
        return
    if name == "zfs" and not re.search(r"\bdestroy\b", args):
        return
    if name == "mdadm" and not re.search(r"--zero-superblock|--create|--fail|--remove", args):
        return
    if name == "diskutil" and not re.search(r"erase|partitionDisk|zeroDisk|secureErase|reformat", args, re.I):
        return
    if name == "dmsetup" and not re.search(r"\b(remove|remove_all|wipe_table)\b", args):
        return
    if name == "badblocks" and not re.search(r"-\w*w", args):
        return
    if name == "flashrom" and not re.search(r"-w|--write|-E|--erase", args):
        return
    if name in ("sgdisk", "sfdisk") and re.search(r"^(-p|--print|-l|--list|-d|--dump|-V)\b", args):
        return
    az.add(
        "disk_destruction",
        ctx.part,
        f"{name} rewrites or erases a disk or volume",
        bool(device) or name == "wipefs",
    )


def _disk_format(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    targets = _args(argv)
    device = any((wr := az.write_risk(t)) and wr[1] == "disk_destruction" for t in targets)
    if not device and targets and all(_project_file(az, t) for t in targets):
        return  # a filesystem inside an image file of the project erases nothing else
    az.add("disk_destruction", ctx.part, "creates a filesystem (erases what was there)", device)


@rule("dd")
def _dd(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    for a in argv[1:]:
        if a.startswith("of="):
            risk = az.write_risk(a[3:])
            if risk is not None:
                az.add("disk_destruction" if risk[1] == "disk_destruction" else risk[1], ctx.part,
                       f"dd writes to {risk[2]}", risk[0] == "hardline")  # fmt: skip
        if a.startswith("if=") and az.credential_path(a[3:]):
            stage.produces.add("cred")


def _project_file(az: Analyzer, raw: str) -> bool:
    """Whether ``raw`` is a plain file of the workspace (relative, not climbing out, not a device)."""
    path = az.path(raw)
    if UNKNOWN in path or ".." in path.split("/"):
        return False
    if not path.startswith(("/", "~")):
        return True
    return bool(az.workspace) and is_inside(normalize(path), az.workspace or "")


@rule("tee", "cp", "mv", "install", "ln", "truncate", "rsync", "touch", "sponge", "patch", "unzip", "tar")
def _writers(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    name = argv[0].rsplit("/", 1)[-1]
    args = _args(argv)
    if name in ("tar", "unzip", "touch", "patch"):
        dests = []
        for k, a in enumerate(argv):
            if a in ("-C", "--directory", "-d") and k + 1 < len(argv):
                dests.append(argv[k + 1])
        if name == "touch":
            return
        for d in dests:
            if az.normalize(d) in ("/", "/etc", "/usr", "/bin", "/boot", "~"):
                az.add("system_file_write", ctx.part, f"extracts an archive over {d}")
        return
    if name == "tee":
        targets = args
        stage.text = ctx.upstream.text if ctx.upstream else None
    elif name == "truncate":
        targets = [a for a in args if not re.fullmatch(r"[-+<>/%]?\d+[KMGTkmgt]?B?", a)]
    elif name in ("cp", "mv", "install", "ln", "rsync"):
        targets = args[-1:] if len(args) >= 2 else []
        if "-t" in argv:
            idx = argv.index("-t")
            targets = argv[idx + 1 : idx + 2]
        if name == "mv":
            for src in args[:-1]:
                moved = az.deletion_risk(src)
                if moved is not None:
                    az.add("recursive_delete", ctx.part, f"moves away {moved[1]}", moved[0] == "hardline")
        if name == "rsync" and "|delete|" in _flags(argv):
            for t in targets:
                wiped = az.deletion_risk(t.rstrip("/") or "/")
                if wiped is not None:
                    az.add(
                        "recursive_delete",
                        ctx.part,
                        f"rsync --delete over {wiped[1]}",
                        wiped[0] == "hardline",
                    )
    else:
        targets = args
    for t in targets:
        if name == "rsync" and ":" in t and not t.startswith("/"):
            continue
        risk = az.write_risk(t)
        if risk is not None:
            level, category, what = risk
            az.add(category, ctx.part, f"{name} overwrites {what}", level == "hardline")
        elif name in ("ln", "cp", "mv", "install") and (az.deletion_risk(t) or ("", ""))[0] == "hardline":
            az.add("system_file_write", ctx.part, f"{name} writes into {t}")


@rule("sed")
def _sed(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    if not re.search(r"i", _flags(argv).replace("|in-place|", "i")):
        return
    for t in _args(argv)[1:]:
        risk = az.write_risk(t)
        if risk is not None:
            az.add(risk[1], ctx.part, f"edits {risk[2]} in place", risk[0] == "hardline")


@rule("chmod", "chown", "chgrp", "chattr", "setfacl")
def _perms(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    flags = _flags(argv)
    recursive = bool(re.search(r"R|\|recursive\|", flags))
    args = [a for a in argv[1:] if not (a.startswith("-") and not re.fullmatch(r"-[rwxXstugo]+", a))]
    mode = args[0] if args else ""
    targets = args[1:]
    name = argv[0].rsplit("/", 1)[-1]
    if name == "chmod" and (re.search(r"(^|,)[ugoa]*\+[rwx]*s", mode) or re.fullmatch(r"[2467]\d{3}", mode)):
        az.add("privilege_escalation", ctx.part, "sets the setuid/setgid bit")
    if name == "chattr" and re.match(r"-[ia]", mode):
        if any(az.write_risk(t) for t in targets):
            az.add("security_disable", ctx.part, "removes the immutable flag from a system file")
        return
    for t in targets:
        risk = az.deletion_risk(t)
        strict = (
            "/etc",
            "/usr",
            "/bin",
            "/sbin",
            "/lib",
            "/lib64",
            "/boot",
            "/sys",
            "/proc",
            "/dev",
            "/root",
        )
        if (
            risk is not None
            and risk[0] != "hardline"
            and not any(is_inside(az.normalize(t), d) for d in strict)
        ):
            risk = None
        if risk is not None and (recursive or risk[0] == "hardline"):
            az.add("permissions", ctx.part, f"{name} {'-R ' if recursive else ''}on {risk[1]}",
                   risk[0] == "hardline" and recursive and az.normalize(t) in ("/", "~"))  # fmt: skip
            continue
        wr = az.write_risk(t)
        cred = az.credential_path(t)
        if wr is not None or (cred and re.search(r"[0-7]?[0-7][1-7][1-7]$|o\+|a\+|\+r", mode)):
            if name == "chmod" and re.fullmatch(r"0?[0-7]00|u[+=]r?w?|go-rwx|og-rwx|600|400", mode):
                continue
            az.add("permissions", ctx.part, f"{name} changes {t}")


_OWN_PID_VARS = frozenset({"!", "$"})  # the last background job and the shell itself: its own tree


def _arg_vars(argv: list[str], ctx: Ctx) -> list[set[str]]:
    """The variables each word of ``argv`` was expanded from (wrappers stripped from the front)."""
    tail = ctx.fields[len(ctx.fields) - len(argv) :] if len(ctx.fields) >= len(argv) else []
    return [set(names) for _, names, _ in tail] if len(tail) == len(argv) else [set() for _ in argv]


def _own_target(az: Analyzer, target: str, names: set[str]) -> bool:
    """Whether a kill target is one of the command's own processes (a job, ``$!``, ``$$``, its group)."""
    if target.startswith("%") or target in ("0", "-0") or target.lstrip("-") == OWN_PID:
        return True
    if UNKNOWN in target:
        return bool(names) and names <= _OWN_PID_VARS
    return False


@rule("kill", "pkill", "killall", "killall5", "skill", "slay")
def _kill(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    name = argv[0].rsplit("/", 1)[-1]
    args = argv[1:]
    if name == "killall5":
        az.add("kill_all", ctx.part, "signals every process", True)
        return
    if name == "kill":
        feed = "xargs" in ctx.taints  # the process ids come from its input
        names = _arg_vars(argv, ctx)[1:]
        targets: list[tuple[str, set[str]]] = []
        signal = ""
        i = 0
        while i < len(args):
            a = args[i]
            if a in ("-s", "-n", "--signal"):
                signal = args[i + 1] if i + 1 < len(args) else ""
                i += 2
                continue
            if a == "--":
                targets.extend(zip(args[i + 1 :], names[i + 1 :], strict=False))
                break
            if i == 0 and re.fullmatch(r"-(\d+|[A-Za-z]+[A-Za-z0-9+-]*)", a) and (len(args) > 1 or feed):
                signal = a[1:]
                i += 1
                continue
            if a in ("-l", "-L"):
                return
            targets.append((a, names[i] if i < len(names) else set()))
            i += 1
        plain = [t for t, _ in targets]
        if "-1" in plain or "1" in plain:
            az.add("kill_all", ctx.part, "signals every process (or init)", True)
        elif "pids" in ctx.taints:
            az.add("kill_all", ctx.part, "signals every process listed by ps", True)
        elif signal not in ("0", "SIG0") and feed and not targets:
            az.add("signal_process", ctx.part, "signals the processes its input names, not ones it started")
        elif signal not in ("0", "SIG0") and any(not _own_target(az, t, n) for t, n in targets):
            foreign = next(t for t, n in targets if not _own_target(az, t, n)).replace(UNKNOWN, "$?")
            az.add(
                "signal_process",
                ctx.part,
                f"signals a process it did not start ({foreign}): only its own jobs ($!, %N, $$) are its own",
            )
        return
    pattern_args = [a for a in args if not a.startswith("-")]
    if "-u" in args or "--user" in args:
        user = args[args.index("-u" if "-u" in args else "--user") + 1] if len(args) > 1 else ""
        if user in ("root", "0", UNKNOWN) or user.startswith("$"):
            az.add("kill_all", ctx.part, f"kills every process of user {user}")
    if any(p in (".", ".*", "", "*", "^", "$", "^.*$") for p in pattern_args) or (
        name == "killall" and "-r" in args and "." in pattern_args
    ):
        az.add("kill_all", ctx.part, "kills processes matching everything", True)
    if any(p in ("init", "systemd", "sshd", "dbus-daemon", "launchd") for p in pattern_args):
        az.add("kill_all", ctx.part, "kills a critical system process")
    if "-0" in args or "--signal=0" in args or name not in ("pkill", "killall", "skill", "slay"):
        return
    names = _arg_vars(argv, ctx)
    parent = args.index("-P") + 1 if "-P" in args else 0
    if parent and parent < len(args) and _own_target(az, args[parent], names[parent + 1]):
        return  # pkill -P $$: the command's own children
    az.add(
        "signal_process",
        ctx.part,
        f"{name} signals every matching process of the user, not only the ones this command started",
    )


_PS_SELECT = frozenset({"pid", "ppid", "user", "sid", "tty", "group", "quick-pid", "User", "Group"})


@rule("ps")
def _ps(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    """``ps`` listing every process: its ids, handed to ``kill``, would end them all."""
    every = False
    select = False
    skip = False
    for k, a in enumerate(argv[1:]):
        if skip:
            skip = False
            continue
        if a in ("-o", "-O", "o", "O", "--format", "-F") or a.startswith("--sort"):
            skip = a in ("-o", "-O", "o", "O", "--format")
            continue
        if a.startswith("--"):
            select = select or a[2:].split("=")[0] in _PS_SELECT
            continue
        letters = a[1:] if a.startswith("-") else (a if k == 0 else "")
        if a.startswith("-"):
            every = every or bool(re.search(r"[eA]", letters))
            select = select or bool(re.search(r"[pCuUGgstq]", letters))
        else:
            every = every or bool(re.search(r"[ax]", letters))
            select = select or bool(re.search(r"[pUtq]", letters))
    if every and not select:
        stage.produces.add("pids")


@rule("shutdown", "reboot", "halt", "poweroff", "init", "telinit", "kexec", "systemctl", "loginctl", "service", "rc-service",
      "chkconfig", "update-rc.d", "launchctl", "sv")  # fmt: skip
def _system(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    name = argv[0].rsplit("/", 1)[-1]
    args = [a for a in argv[1:] if not a.startswith("-")]
    flags = _flags(argv)
    if name in ("shutdown", "reboot", "halt", "poweroff"):
        if "help" in flags or (name == "shutdown" and "c" in flags.replace("|", "")):
            return
        az.add("shutdown", ctx.part, f"{name} stops the machine")
        return
    if name in ("init", "telinit"):
        if args and args[0] in ("0", "6", "1", "s", "S", "single", "emergency"):
            az.add("shutdown", ctx.part, f"{name} {args[0]} changes the run level")
        return
    if name == "kexec":
        if "e" in flags or "|exec|" in flags:
            az.add("shutdown", ctx.part, "kexec boots another kernel")
        return
    security = r"(firewalld|ufw|iptables|ip6tables|nftables|apparmor|auditd|selinux|fail2ban|sshd?|crowdsec|falco|osqueryd|wazuh-agent|clamav-daemon|clamd|csf|lfd|pf|com\.apple\.alf|syslog|rsyslog|journald|systemd-journald)(\.service)?"
    joined = " ".join(args)
    if name in ("systemctl", "loginctl"):
        if args and args[0] in ("poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "hybrid-sleep",
                                "emergency", "rescue", "soft-reboot", "suspend-then-hibernate"):  # fmt: skip
            az.add("shutdown", ctx.part, f"{name} {args[0]} stops the machine")
        if args and args[0] == "isolate" and re.search(r"rescue|emergency|poweroff|reboot|halt", joined):
            az.add("shutdown", ctx.part, "systemctl isolate switches to a shutdown/rescue target")
        if (
            args
            and args[0] in ("stop", "disable", "mask", "kill")
            and re.search(r"\b" + security + r"\b", joined)
        ):
            az.add("security_disable", ctx.part, f"{name} {args[0]} turns off a security service")
        return
    if (name in ("service", "rc-service", "sv") and len(args) >= 2 and args[1] in ("stop", "disable")) or (
        name == "sv" and args and args[0] in ("stop", "down")
    ):
        if re.search(r"\b" + security + r"\b", joined):
            az.add("security_disable", ctx.part, f"{name} stops a security service")
        return
    if (
        name in ("chkconfig", "update-rc.d")
        and re.search(r"\b" + security + r"\b", joined)
        and re.search(r"\b(off|disable|remove)\b", joined)
    ):
        az.add("security_disable", ctx.part, f"{name} disables a security service")
    if (
        name == "launchctl"
        and re.search(r"\b(unload|bootout|disable)\b", joined)
        and re.search(r"alf|firewall|xprotect|mrt|syspolicy", joined, re.I)
    ):
        az.add("security_disable", ctx.part, "launchctl unloads a security agent")


@rule("iptables", "ip6tables", "iptables-legacy", "iptables-nft", "nft", "ufw", "setenforce", "firewall-cmd", "pfctl",
      "aa-teardown", "aa-disable", "aa-complain", "auditctl", "sysctl", "spctl", "csrutil", "setsebool", "ebtables",
      "arptables", "iptables-restore", "defaults", "netsh", "Set-MpPreference")  # fmt: skip
def _firewall(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    name = argv[0].rsplit("/", 1)[-1]
    args = argv[1:]
    joined = " ".join(args)
    bad = False
    if name.startswith(("iptables", "ip6tables", "ebtables", "arptables")) and name != "iptables-restore":
        bad = bool(
            re.search(
                r"(^|\s)(-F|--flush|-X|--delete-chain|-Z)\b|-P\s+\w+\s+ACCEPT|--policy\s+\w+\s+ACCEPT", joined
            )
        )
        bad = bad or bool(re.search(r"(^|\s)-[A-Za-z]*F", joined))
    elif name == "iptables-restore":
        bad = "/dev/null" in joined or (ctx.stdin_text is not None and "ACCEPT" in (ctx.stdin_text or ""))
    elif name == "nft":
        bad = bool(re.search(r"flush\s+ruleset|delete\s+table|flush\s+table|flush\s+chain", joined))
    elif name == "ufw":
        bad = bool(re.search(r"\b(disable|reset)\b|default\s+allow", joined))
    elif name == "setenforce":
        bad = bool(re.search(r"\b(0|permissive)\b", joined, re.I))
    elif name == "firewall-cmd":
        bad = bool(
            re.search(
                r"--panic-off|--set-default-zone[= ]trusted|--remove-service[= ]ssh|--complete-reload.*--permanent.*--remove",
                joined,
            )
        )
        bad = bad or bool(
            re.search(r"--add-port[= ]\d+-\d+|--zone[= ]trusted\s+--add-source[= ]0\.0\.0\.0/0", joined)
        )
    elif name == "pfctl":
        bad = bool(re.search(r"(^|\s)-d\b|-F\s*all", joined))
    elif name in ("aa-teardown",) or name in ("aa-disable", "aa-complain"):
        bad = True
    elif name == "auditctl":
        bad = bool(re.search(r"(^|\s)-D\b|-e\s*0", joined))
    elif name == "sysctl":
        bad = bool(re.search(r"randomize_va_space\s*=\s*0|kernel\.(yama\.ptrace_scope|kptr_restrict|dmesg_restrict)\s*=\s*0|"
                             r"kernel\.modules_disabled|net\.ipv4\.ip_forward\s*=\s*1.*-w|fs\.suid_dumpable\s*=\s*[12]", joined))  # fmt: skip
    elif name == "spctl":
        bad = bool(re.search(r"--master-disable|--global-disable|--disable", joined))
    elif name == "csrutil":
        bad = bool(re.search(r"\bdisable\b", joined))
    elif name == "setsebool":
        bad = bool(re.search(r"\b(off|0)\b", joined)) and "secure_mode" in joined
    elif name == "defaults":
        bad = bool(
            re.search(r"com\.apple\.alf.*globalstate.*\b0\b|LSQuarantine.*false|GKAutoRearm", joined, re.I)
        )
    elif name in ("netsh", "Set-MpPreference"):
        bad = bool(re.search(r"state\s+off|Disable\w*\s+\$?true", joined, re.I))
    if bad:
        az.add("security_disable", ctx.part, f"{name} flushes the firewall or turns a protection off")


_CRITICAL_PKGS = re.compile(
    r"^(libc6|libc-bin|glibc.*|musl|systemd|systemd-sysv|bash|coreutils|sudo|openssh-server|openssh|apt|dpkg|rpm|yum|dnf|"
    r"linux-image.*|linux-generic|linux|linux-lts|kernel.*|grub.*|grub2.*|init|login|passwd|util-linux|base-files|"
    r"base-passwd|libpam.*|pam|python3|python3-minimal|python|perl-base|zlib1g|zlib|libselinux.*|e2fsprogs|mount|"
    r"ubuntu-minimal|ubuntu-standard|debianutils|tar|gzip|sed|grep|findutils|procps|ncurses-base|libstdc\+\+.*|gcc-libs|"
    r"pacman|apk-tools|busybox|filesystem|shadow|sysvinit.*|openssl|libssl.*|ca-certificates|iproute2|network-manager|"
    r"\*|'\*'|.*\*)$"
)


@rule("apt", "apt-get", "aptitude", "dpkg", "yum", "dnf", "rpm", "pacman", "apk", "zypper", "snap", "emerge", "xbps-remove",
      "pkg", "port", "brew", "pip", "pip3")  # fmt: skip
def _packages(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    name = argv[0].rsplit("/", 1)[-1]
    args = argv[1:]
    joined = " ".join(args)
    if re.search(r"--force-remove-essential|--allow-remove-essential|--force-all\b.*(-r|-P|--purge|--remove)|"
                 r"(-r|-P|--purge|--remove)\b.*--force-all|--nodeps.*-e\b|-e\b.*--nodeps|-Rdd|-Rndd", joined):  # fmt: skip
        az.add("package_removal", ctx.part, f"{name} removes packages while overriding dependency protection")
        return
    removing = False
    if name in ("apt", "apt-get", "aptitude", "yum", "dnf", "zypper", "snap", "brew", "pkg", "port"):
        removing = bool(re.search(r"\b(remove|purge|autoremove|erase|rm|uninstall|delete)\b", joined))
    elif name == "dpkg":
        removing = bool(re.search(r"(^|\s)(-r|-P|--remove|--purge)\b", joined))
    elif name == "rpm":
        removing = bool(re.search(r"(^|\s)(-e|--erase)\b", joined))
    elif name == "pacman":
        removing = bool(re.search(r"(^|\s)-R", joined))
    elif name in ("apk",):
        removing = bool(re.search(r"\bdel\b", joined))
    elif name in ("emerge",):
        removing = bool(re.search(r"--unmerge|-C\b|--depclean", joined))
    elif name == "xbps-remove":
        removing = True
    elif name in ("pip", "pip3"):
        if (
            re.search(r"\buninstall\b", joined)
            and re.search(r"(^|\s)(pip|setuptools)(\s|$)", joined)
            and "--break-system-packages" in joined
        ):
            az.add("package_removal", ctx.part, "uninstalls the system pip")
        return
    if not removing:
        return
    for pkg in [a for a in args if not a.startswith("-")]:
        if _CRITICAL_PKGS.match(pkg.strip("'\"")):
            az.add("package_removal", ctx.part, f"{name} removes the critical package {pkg}")
            return


@rule("docker", "podman", "nerdctl", "docker-compose")
def _docker(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    name = argv[0].rsplit("/", 1)[-1]
    args = argv[1:]
    joined = " ".join(args)
    flags = _flags(argv)
    sub = [a for a in args if not a.startswith("-")]
    if sub[:2] == ["system", "prune"] and ("a" in flags or "|all|" in flags or "|volumes|" in flags):
        az.add("infrastructure_teardown", ctx.part, f"{name} system prune removes every unused image/volume")
    elif sub[:2] == ["system", "reset"] or (
        sub[:2] == ["volume", "prune"] and ("f" in flags or "a" in flags)
    ):
        az.add("infrastructure_teardown", ctx.part, f"{name} {' '.join(sub[:2])} removes data volumes")
    elif sub[:2] in (["volume", "rm"], ["volume", "remove"]) and ctx.taints & {"dynamic"} | {
        t for t in ctx.taints if t.startswith("cmd:")
    }:
        az.add("infrastructure_teardown", ctx.part, f"{name} removes volumes listed at run time")
    elif (
        sub
        and sub[0] in ("rm", "rmi", "kill", "stop")
        and ("cmd:docker" in ctx.taints or "cmd:podman" in ctx.taints)
        and UNKNOWN in joined
    ):
        az.add(
            "infrastructure_teardown",
            ctx.part,
            f"{name} {sub[0]} on every container/image listed at run time",
        )
    elif (
        (sub[:1] == ["compose"] or name == "docker-compose")
        and "down" in sub
        and ("v" in flags or "|volumes|" in flags)
    ):
        az.add("infrastructure_teardown", ctx.part, "compose down -v deletes the data volumes")
    elif sub[:2] == ["swarm", "leave"] and "f" in flags:
        az.add("infrastructure_teardown", ctx.part, "forces the node out of the swarm")
    if ((sub and sub[0] in ("run", "create")) or sub[:2] == ["container", "run"]) and (
        "|privileged|" in flags
        or re.search(r"(-v|--volume)[= ]/:/|--pid[= ]host|--volume[= ]/:|-v\s*/:", joined)
        or re.search(r"/var/run/docker\.sock:", joined)
    ):
        az.add(
            "privilege_escalation",
            ctx.part,
            "runs a container with the host's root filesystem or privileges",
        )


@rule("kubectl", "oc", "k", "kubecolor")
def _kubectl(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    args = argv[1:]
    flags = _flags(argv)
    sub = [a for a in args if not a.startswith("-")]
    if not sub:
        return
    if sub[0] == "delete":
        kinds = sub[1].split(",") if len(sub) > 1 else []
        if "|all|" in flags or "|all-namespaces|" in flags or "A" in flags.replace("|", " ").split() or (
            "-A" in args
        ) or any(k in ("namespace", "namespaces", "ns", "node", "nodes", "no", "pv", "persistentvolume",
                       "persistentvolumes", "crd", "crds", "customresourcedefinition", "customresourcedefinitions",
                       "clusterrole", "clusterrolebinding") for k in kinds) or re.search(r"--selector[= ]?$|-l\s*''", " ".join(args)):  # fmt: skip
            az.add(
                "infrastructure_teardown",
                ctx.part,
                "kubectl delete removes whole namespaces, nodes or every resource",
            )
    elif (
        sub[0] == "drain"
        or (sub[0] == "scale" and "|all|" in flags)
        or (sub[0] == "cordon" and "|all|" in flags)
    ):
        az.add("infrastructure_teardown", ctx.part, f"kubectl {sub[0]} takes workloads down")


@rule("terraform", "tofu", "terragrunt", "pulumi", "cdk", "cdktf", "serverless", "sls", "sam", "helm", "eksctl",
      "kind", "minikube", "k3d", "vagrant", "heroku", "flyctl", "fly", "vercel", "netlify", "firebase", "doctl",
      "gcloud", "gsutil", "az", "aws", "ibmcloud", "oci", "linode-cli", "hcloud", "scw", "s3cmd", "rclone",
      "databricks", "railway", "supabase")  # fmt: skip
def _cloud(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    name = argv[0].rsplit("/", 1)[-1]
    args = argv[1:]
    joined = " ".join(args)
    sub = [a for a in args if not a.startswith("-")]
    if name in ("terraform", "tofu", "terragrunt", "pulumi", "cdk", "cdktf", "serverless", "sls", "sam"):
        if (
            sub
            and sub[0] in ("destroy", "remove", "delete", "run-all")
            and re.search(r"destroy|remove|delete", joined)
        ):
            az.add("infrastructure_teardown", ctx.part, f"{name} destroys the managed infrastructure")
        elif sub and sub[0] in ("apply", "up") and re.search(r"(^|\s)-destroy\b|--destroy", joined):
            az.add(
                "infrastructure_teardown", ctx.part, f"{name} apply -destroy tears the infrastructure down"
            )
        elif name in ("terraform", "tofu") and sub[:2] == ["state", "rm"] and UNKNOWN in joined:
            az.add("infrastructure_teardown", ctx.part, "terraform state rm on resources listed at run time")
        elif name == "pulumi" and sub[:2] == ["stack", "rm"]:
            az.add("infrastructure_teardown", ctx.part, "pulumi stack rm deletes a stack")
        return
    if name in ("helm",):
        if (
            sub
            and sub[0] in ("uninstall", "delete", "del")
            and re.search(r"--all\b|-A\b|kube-system", joined)
        ):
            az.add("infrastructure_teardown", ctx.part, "helm uninstalls every release")
        return
    if name in ("kind", "minikube", "k3d", "eksctl"):
        if sub and sub[0] == "delete" and re.search(r"--all\b|cluster", joined) and name == "eksctl":
            az.add("infrastructure_teardown", ctx.part, f"{name} deletes a cluster")
        return
    if name in ("s3cmd",):
        if sub and sub[0] in ("rb", "del", "rm") and re.search(r"--recursive|-r\b|--force", joined):
            az.add("infrastructure_teardown", ctx.part, "s3cmd deletes a bucket or its objects")
        return
    if name == "rclone":
        if (sub and sub[0] in ("purge", "delete")) or (sub and sub[0] == "sync" and "/dev/null" in joined):
            az.add("infrastructure_teardown", ctx.part, "rclone deletes remote data")
        return
    if name == "gsutil":
        if re.search(r"\b(rm|rb)\b", joined) and re.search(r"(-r|-R|-m|-a)\b|gs://[^/\s]+/?(\s|$)", joined):
            az.add("infrastructure_teardown", ctx.part, "gsutil deletes a bucket or its objects")
        return
    if name == "aws":
        if sub[:2] in (["s3", "rb"],) or (sub[:2] == ["s3", "rm"] and "--recursive" in args):
            az.add("infrastructure_teardown", ctx.part, "aws s3 deletes a bucket or its objects")
        elif len(sub) >= 2 and re.match(r"(delete|terminate|deregister|remove|purge|destroy|disable)-", sub[1]) and sub[0] not in (
            "configure", "sts", "logs") and not sub[1].startswith(("delete-tags", "delete-message")):  # fmt: skip
            az.add("infrastructure_teardown", ctx.part, f"aws {sub[0]} {sub[1]} deletes cloud resources")
        return
    if name == "gcloud":
        if re.search(r"\b(delete|destroy)\b", joined) and not re.search(r"\bconfig\b|\bauth\b", joined):
            az.add("infrastructure_teardown", ctx.part, "gcloud deletes cloud resources")
        return
    clouds = ("az", "doctl", "ibmcloud", "oci", "linode-cli", "hcloud", "scw", "heroku", "flyctl", "fly", "vercel",
              "netlify", "firebase", "databricks", "vagrant", "railway", "supabase")  # fmt: skip
    destroys = re.search(
        r"\b(delete|destroy|remove|rm|purge|terminate|apps:destroy|projects:delete|sites:delete|destroy-all)\b",
        joined,
    )
    if name not in clouds or not destroys or re.search(r"\b(config|login|logout|auth|cache)\b", joined):
        return
    if name == "vagrant" and "destroy" not in joined:
        return
    if name in ("heroku", "vercel", "netlify") and not re.search(
        r"destroy|delete|remove\s+\S+\s+--yes|rm\s+\S+\s+--yes", joined
    ):
        return
    az.add("infrastructure_teardown", ctx.part, f"{name} deletes cloud resources")


@rule("git")
def _git(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    args = argv[1:]
    while args and args[0] in ("-C", "-c", "--git-dir", "--work-tree"):
        args = args[2:]
    if not args:
        return
    if args[0] == "push":
        rest = args[1:]
        force = any(a in ("-f", "--force", "--force-with-lease", "--mirror", "--force-if-includes") or
                    a.startswith("--force-with-lease=") or re.fullmatch(r"-[a-zA-Z]*f[a-zA-Z]*", a) for a in rest)  # fmt: skip
        delete = any(a in ("-d", "--delete", "--prune") for a in rest)
        positional = [a for a in rest if not a.startswith("-")]
        refspecs = positional[1:]
        shared = re.compile(r"^\+?(refs/heads/)?(main|master|develop|development|dev|trunk|release.*|prod|production|"
                            r"staging|stable|gh-pages|HEAD)(:.*)?$|^\+?[^:]*:(refs/heads/)?(main|master|develop|trunk|"
                            r"release.*|prod|production|staging|stable)$")  # fmt: skip
        plus = [r for r in refspecs if r.startswith("+")]
        deletes = [r for r in refspecs if r.startswith(":")]
        if "--mirror" in rest or ("--all" in rest and force):
            az.add("force_push", ctx.part, "force-pushes every branch of the repository")
        elif (force or plus) and (
            not refspecs or any(shared.match(r) for r in refspecs) or any(shared.match(r) for r in plus)
        ):
            az.add(
                "force_push",
                ctx.part,
                "force-pushes a shared branch (or the current branch, which may be shared)",
            )
        elif (delete and any(shared.match(r) for r in refspecs)) or any(shared.match(r[1:]) for r in deletes):
            az.add("force_push", ctx.part, "deletes a shared branch on the remote")
    elif args[0] == "filter-repo" or (args[0] == "filter-branch" and "--force" in args):
        az.add("force_push", ctx.part, "rewrites the whole history of the repository")
    elif (
        args[0] == "config"
        and re.search(r"core\.(hooksPath|sshCommand|pager|editor|fsmonitor)", " ".join(args))
        and UNKNOWN not in " ".join(args)
    ) and re.search(r"curl|wget|nc |bash -c|sh -c|/dev/tcp", " ".join(args)):
        az.add("remote_code_execution", ctx.part, "configures git to run a downloaded or network command")


@rule("crontab")
def _crontab(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    flags = _flags(argv)
    args = _args(argv)
    if "r" in flags.replace("|", ""):
        az.add("crontab", ctx.part, "removes the crontab")
    elif "-" in args or (not args and not flags):
        stage.consumes = "crontab"
        if ctx.stdin_text is not None:
            az.add("crontab", ctx.part, "replaces the crontab")
    elif args and "l" not in flags and "e" not in flags:
        az.add("crontab", ctx.part, f"replaces the crontab with {args[0]}")


@rule("dropdb", "dropuser", "mysqladmin", "mongo", "mongosh", "redis-cli", "valkey-cli", "keydb-cli", "etcdctl",
      "psql", "mysql", "mariadb", "sqlite3", "sqlcmd", "cqlsh", "clickhouse-client", "clickhouse", "duckdb", "snowsql",
      "isql", "sqlplus", "mysqlsh", "pgcli", "mycli", "litecli", "usql", "influx", "cockroach", "rails", "rake",
      "manage.py", "artisan", "prisma", "bq")  # fmt: skip
def _database(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    name = argv[0].rsplit("/", 1)[-1]
    joined = " ".join(argv[1:])
    if name in DB_CLIENTS or name in ("clickhouse", "cockroach", "bq", "influx"):
        stage.consumes = "db"
    if name in ("dropdb",):
        az.add("database_drop", ctx.part, "drops a database")
        return
    if name == "dropuser":
        az.add("database_drop", ctx.part, "drops a database role")
        return
    if name == "mysqladmin" and re.search(r"\bdrop\b", joined):
        az.add("database_drop", ctx.part, "mysqladmin drops a database")
        return
    if name in ("redis-cli", "valkey-cli", "keydb-cli") and re.search(
        r"\b(flushall|flushdb)\b", joined, re.I
    ):
        az.add("database_drop", ctx.part, "wipes every key of the Redis server")
        return
    if name == "etcdctl" and re.search(r"\bdel\b.*(--prefix|--from-key)|\bdefrag\b.*--cluster", joined):
        az.add("database_drop", ctx.part, "deletes keys of the etcd cluster by prefix")
        return
    if name == "influx" and re.search(r"\b(bucket|org)\s+delete\b", joined):
        az.add("database_drop", ctx.part, "deletes an InfluxDB bucket")
        return
    if name in ("rails", "rake") and re.search(r"\bdb:(drop|reset|purge|schema:load|truncate_all)\b", joined):
        az.add("database_drop", ctx.part, f"{name} drops or wipes the database")
        return
    if name == "manage.py" and re.search(r"\b(flush|reset_db|sqlflush)\b", joined):
        az.add("database_drop", ctx.part, "manage.py wipes the database")
        return
    if name == "artisan" and re.search(r"\b(migrate:fresh|migrate:reset|db:wipe)\b", joined):
        az.add("database_drop", ctx.part, "artisan wipes the database")
        return
    if name == "prisma" and re.search(r"migrate\s+reset|db\s+push\s+.*--force-reset", joined):
        az.add("database_drop", ctx.part, "prisma resets the database")
        return
    texts = [joined]
    if ctx.stdin_text:
        texts.append(ctx.stdin_text)
    for text in texts:
        stmt = sql_findings(text)
        if stmt:
            az.add("database_drop", ctx.part, f"runs a destructive statement ({stmt})")
            return


@rule("base64", "base32", "basenc", "xxd", "uudecode", "openssl", "rev", "tr", "gunzip", "zcat", "gzip", "bzcat",
      "xzcat", "zstdcat", "unxz", "bunzip2", "lzcat", "brotli", "rot13", "caesar", "uncompress", "gpg", "iconv")  # fmt: skip
def _decoders(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    name = argv[0].rsplit("/", 1)[-1]
    flags = _flags(argv)
    joined = " ".join(argv[1:])
    decoding = {
        "base64": "d" in flags.replace("|", "") or "|decode|" in flags,
        "base32": "d" in flags.replace("|", "") or "|decode|" in flags,
        "basenc": "d" in flags.replace("|", "") or "|decode|" in flags,
        "xxd": "r" in flags,
        "openssl": bool(re.search(r"\b(enc|base64)\b.*-d\b|-d\b.*\b(enc|base64)\b|\bs_client\b", joined)),
        "gzip": "d" in flags,
        "gpg": "d" in flags or "|decrypt|" in flags,
    }.get(name, True)
    if name == "openssl" and "s_client" in joined:
        stage.produces.add("netin")
        stage.consumes = "network"
        return
    if decoding:
        stage.produces.add("decode")
        if ctx.stdin_text is not None or (ctx.upstream is not None and ctx.upstream.produces & {"download"}):
            stage.produces |= {"decode"}


@rule(*DOWNLOADERS)
def _download(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    name = argv[0].rsplit("/", 1)[-1]
    stage.produces.add("download")
    stage.consumes = "network"
    for k, a in enumerate(argv):
        if a in ("-o", "--output", "-O", "--output-document", "-P", "--directory-prefix") and k + 1 < len(
            argv
        ):
            if a == "-O" and name == "curl":
                continue
            az.downloaded.add(argv[k + 1])
        elif a.startswith(("--output=", "--output-document=", "-O", "-o")) and len(a) > 2 and "=" in a:
            az.downloaded.add(a.split("=", 1)[1])
    if name == "curl" and ("-O" in argv or "--remote-name" in argv):
        for a in _args(argv):
            if "://" in a:
                az.downloaded.add(a.rstrip("/").rsplit("/", 1)[-1])
    if name in ("wget", "wget2") and not any(a in ("-O", "--output-document", "-qO-", "-O-") for a in argv):
        for a in _args(argv):
            if "://" in a:
                az.downloaded.add(a.split("?")[0].rstrip("/").rsplit("/", 1)[-1])
    data_flags = ("-d", "--data", "--data-binary", "--data-raw", "-F", "--form", "-T", "--upload-file", "--post-file",
                  "--body-file", "--data-urlencode", "--data-ascii", "--form-string")  # fmt: skip
    for value in _option_values(argv, data_flags):
        if value in ("@-", "-", "@/dev/stdin", "/dev/stdin"):
            stage.consumes = "network"
        for candidate in (value.lstrip("@"), value.split("=@", 1)[-1], value.split("@", 1)[-1]):
            if az.credential_path(candidate) or secret_file(candidate):
                az.add("exfiltration", ctx.part, f"uploads the credential file {candidate}", True)
                break
            if az.normalize(candidate).startswith("/etc/"):
                az.add("exfiltration", ctx.part, f"uploads the system file {candidate}")
                break


def _option_values(argv: list[str], options: tuple[str, ...]) -> list[str]:
    """Values of the given options in any spelling: ``-d X``, ``-dX``, ``--data X``, ``--data=X``."""
    values: list[str] = []
    for k, a in enumerate(argv[1:], start=1):
        if a in options:
            if k + 1 < len(argv):
                values.append(argv[k + 1])
        elif a.startswith("--") and "=" in a and a.split("=", 1)[0] in options:
            values.append(a.split("=", 1)[1])
        elif not a.startswith("--") and len(a) > 2 and a[:2] in options:
            values.append(a[2:])
    return values


@rule(*NET_TOOLS)
def _netcat(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    name = argv[0].rsplit("/", 1)[-1]
    joined = " ".join(argv[1:])
    stage.produces.add("netin")
    stage.consumes = "network"
    az.socket_open = True
    if re.search(r"(^|\s)(-e|-c|--exec|--sh-exec|--lua-exec)\b|(^|\s)-\w*[ec]\s", joined):
        az.add("reverse_shell", ctx.part, f"{name} hands a shell to a network connection", True)
    if (
        name == "socat"
        and re.search(r"exec:|system:|EXEC:|SYSTEM:", joined, re.I)
        and re.search(r"tcp|udp|ssl|openssl|sctp|unix", joined, re.I)
    ):
        az.add("reverse_shell", ctx.part, "socat connects a shell to the network", True)
    if ctx.stdin_taints & {"cred"}:
        az.add("exfiltration", ctx.part, "sends a credential file over the network", True)


@rule("cd", "pushd", "chdir")
def _cd(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    args = [a for a in argv[1:] if a not in ("-L", "-P", "-e", "-@", "--")]
    az.chdir(args[0] if args else "~")


@rule("at", "batch")
def _at(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    """``at``/``batch`` run the commands they read (stdin or ``-f file``) later, in a shell."""
    if {"-l", "-r", "-d", "-c"} & set(argv):
        return
    stage.consumes = "shell"
    script = _opt_value(argv, "f")
    text = az.written_script(script) if script is not None else ctx.stdin_text
    if text is not None:
        az.payload(text, ctx.part)


_TMUX_RUNS = frozenset(
    {"new-session", "new", "new-window", "neww", "split-window", "splitw", "respawn-pane", "respawnp",
     "respawn-window", "respawnw", "run-shell", "run", "display-popup", "popup", "pipe-pane", "pipep",
     "send-keys", "send"}
)  # fmt: skip


@rule("tmux")
def _tmux(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    """tmux commands that start a shell command (or type one into a pane)."""
    args = _strip_options(argv, "LSf")
    if not args or args[0] not in _TMUX_RUNS:
        return
    words = _strip_options(args, "cstnxyeFlp")
    if args[0] in ("send-keys", "send"):
        words = [w for w in words if w not in ("Enter", "C-m", "KPEnter")]
    if words:
        az.payload(" ".join(words), ctx.part)


@rule("mkfifo", "mknod")
def _fifo(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    return


@rule("useradd", "usermod", "adduser", "gpasswd", "passwd", "chpasswd", "visudo", "setcap", "newgrp", "groupmod",
      "vipw", "pwck", "dscl", "addgroup", "userdel", "deluser")  # fmt: skip
def _accounts(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    name = argv[0].rsplit("/", 1)[-1]
    joined = " ".join(argv[1:])
    if name == "setcap" and re.search(
        r"cap_(setuid|setgid|sys_admin|dac_override|dac_read_search|sys_ptrace|chown|fowner)", joined
    ):
        az.add("privilege_escalation", ctx.part, "grants a binary root capabilities")
    elif name in ("usermod", "gpasswd", "adduser", "addgroup") and re.search(
        r"\b(sudo|wheel|admin|root|docker|disk|lxd|shadow)\b", joined
    ):
        az.add("privilege_escalation", ctx.part, f"{name} adds a user to a privileged group")
    elif name in ("useradd", "usermod") and re.search(
        r"(-u|--uid)\s*0\b|-o\b.*-u\s*0|(-g|--gid)\s*0\b", joined
    ):
        az.add("privilege_escalation", ctx.part, f"{name} creates a second root account")
    elif name in ("passwd",) and re.search(r"(^|\s)(-d|--delete|-u|root)\b", joined):
        az.add("privilege_escalation", ctx.part, "passwd removes or changes a privileged password")
    elif name in ("chpasswd",) or (name == "dscl" and re.search(r"-(passwd|append).*(admin|root)", joined)):
        az.add("privilege_escalation", ctx.part, f"{name} changes account passwords")
    elif name in ("visudo", "vipw") and not (name == "visudo" and ({"-c", "--check"} & set(argv))):
        az.add("privilege_escalation", ctx.part, f"{name} edits the sudo/account database")
    elif name in ("userdel", "deluser") and re.search(r"\broot\b|(-r|--remove)", joined):
        az.add("privilege_escalation", ctx.part, f"{name} deletes an account and its files")


@rule("trap")
def _trap(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    if len(argv) > 1 and argv[1] not in ("-l", "-p", "-"):
        az.payload(argv[1], ctx.part)


@rule("mount", "umount", "swapoff", "modprobe", "rmmod", "insmod", "sysrq")
def _kernel(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    name = argv[0].rsplit("/", 1)[-1]
    joined = " ".join(argv[1:])
    if name == "rmmod" or (name == "modprobe" and re.search(r"(^|\s)-r\b", joined)):
        az.add("security_disable", ctx.part, f"{name} unloads a kernel module")
    elif name == "insmod":
        az.add("privilege_escalation", ctx.part, "loads a kernel module")
    elif name == "umount" and re.search(r"(^|\s)-a\b|\s/\s*$|^/$", joined):
        az.add("disk_destruction", ctx.part, "unmounts every filesystem")
    elif name == "mount" and re.search(r"remount.*\s/\s*$|--bind\s+\S+\s+/(etc|usr|bin)\b", joined):
        az.add("system_file_write", ctx.part, "remounts or shadows a system directory")


@rule("fallocate", "stress", "stress-ng", "yes")
def _exhaust(az: Analyzer, argv: list[str], ctx: Ctx, stage: Stage) -> None:
    name = argv[0].rsplit("/", 1)[-1]
    joined = " ".join(argv[1:])
    if name == "fallocate":
        m = re.search(r"-l\s*(\d+(?:\.\d+)?)\s*([KMGTPE]?)", joined, re.I)
        if (m and m.group(2).upper() in ("T", "P", "E")) or (
            m and m.group(2).upper() == "G" and float(m.group(1)) >= 50
        ):
            az.add("resource_exhaustion", ctx.part, "allocates a huge file (fills the disk)")
    elif name in ("stress", "stress-ng") and re.search(
        r"--(vm|fork|cpu|hdd|io)\s*\d{2,}|--(vm-bytes)\s*\d+[GT]|--fork", joined
    ):
        az.add("resource_exhaustion", ctx.part, f"{name} exhausts memory, processes or disk")
