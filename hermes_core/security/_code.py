"""Checks on text that is not shell: inline interpreter code (``python -c``, ``perl -e``...) and SQL.

Interpreter code is not parsed; it is scanned for a few unmistakable shapes (reverse shells, fork loops,
decoded-and-executed payloads, deletion of the root or home, writes to system files) and the string literals
it passes to a process-spawning call are handed back to be judged as shell commands.
"""

from __future__ import annotations

import re
import shlex

__all__ = ["CodeFinding", "code_findings", "shell_strings", "sql_findings"]

CodeFinding = tuple[str, str, bool]  # category, reason, hardline

_SPAWN = re.compile(
    r"\b(os\.system|os\.popen|subprocess|popen|Popen|spawn|exec[lv]?p?e?|system|shell_exec|passthru|proc_open|"
    r"child_process|execSync|spawnSync|run|call|check_output|check_call|getoutput|qx|IO\.popen|Process\.spawn|"
    r"Runtime\.getRuntime|do shell script)\b|`"
)
_STRING = re.compile(
    r"'''(.*?)'''|\"\"\"(.*?)\"\"\"|'((?:[^'\\\n]|\\.){2,})'|\"((?:[^\"\\\n]|\\.){2,})\"", re.S
)
_SOCKET = re.compile(
    r"socket|Socket|fsockopen|TCPSocket|net\.connect|net\.Socket|createConnection|/inet/tcp/|IO::Socket"
)
_SHELLISH = re.compile(
    r"/bin/(ba|z|da|k)?sh\b|pty\.spawn|\bdup2\b|\bexec\b|\bsubprocess\b|child_process|\bspawn\b|cmd\.exe|popen|"
    r"\bsystem\b|\bfdopen\b|open\s*\(\s*STD(IN|OUT)"
)
_FORK_LOOP = re.compile(
    r"(while\s*(True|1|\(1\)|\(true\))\s*:?.{0,80}?\bfork\s*\()|(\bfork\s+while\s+fork)|(\bfork\s*\(\s*\)\s*while)|"
    r"(for\s*\(\s*;\s*;\s*\)\s*\{?\s*fork)|(loop\s*\{\s*fork)|(while\s*\(\s*(1|true)\s*\)\s*\{?\s*(pcntl_)?fork)",
    re.S,
)
_DECODE_EXEC = re.compile(
    r"\b(exec|eval|compile|Function|system)\s*\(\s*[^)]{0,80}?(b64decode|base64|a2b_|fromhex|unhexlify|decompress|"
    r"codecs\.decode|rot.?13|atob|pack\s*\(|Buffer\.from|unpack|decode\s*\(|chr\s*\(|\[::-1\]|reversed|marshal\.loads|urlopen|"
    r"requests\.get|urllib|http\.get|fetch\(|read\(\)|file_get_contents|https?://|URI\.open|Net::HTTP|LWP|get_content)",
    re.S,
)
_RMTREE = re.compile(
    r"(rmtree|rm_rf|rm_r|rmdirSync|rmSync|remove_tree|removedirs|unlink)\s*\(\s*(r?['\"](/|~|/etc|/usr|/home|/boot|/var|/bin|/lib)"
    r"/?['\"]|os\.path\.expanduser\(\s*['\"]~['\"]\s*\)|Path\.home\(\)|os\.environ\[['\"]HOME['\"]\]|os\.homedir\(\))"
)
_SYS_WRITE = re.compile(
    r"open\s*\(\s*['\"](/etc/|/boot/|/dev/sd|/usr/|/proc/sysrq|~?/?\.?(bashrc|zshrc|profile))[^'\"]*['\"]\s*,\s*['\"][wa]"
)
_KILL_ALL = re.compile(
    r"os\.kill\s*\(\s*-1\b|kill\s*\(?\s*(9|'KILL'|\"KILL\"|-9)\s*,\s*-1\b|process\.kill\(\s*-1"
)
_ENV_EXFIL = re.compile(r"(os\.environ|process\.env|%ENV|ENV\[|getenv)")
_NET_SEND = re.compile(
    r"requests\.(post|get|put)|urlopen|urllib|http\.client|fetch\(|https?\.request|XMLHttpRequest|LWP|Net::HTTP|curl"
)


def code_findings(code: str) -> list[CodeFinding]:
    """Findings for inline interpreter code (any language)."""
    out: list[CodeFinding] = []
    if (_SOCKET.search(code) and _SHELLISH.search(code)) or re.search(r"/inet/(tcp|udp)/", code):
        out.append(("reverse_shell", "interpreter code connects a socket to a shell", True))
    if _FORK_LOOP.search(code):
        out.append(("fork_bomb", "interpreter code forks in an endless loop", True))
    if _DECODE_EXEC.search(code):
        out.append(("runtime_code", "interpreter code executes decoded or downloaded text", False))
    if _RMTREE.search(code):
        out.append(
            ("recursive_delete", "interpreter code deletes the root, home or a system directory", True)
        )
    if _SYS_WRITE.search(code):
        out.append(("system_file_write", "interpreter code writes a system or shell startup file", False))
    if _KILL_ALL.search(code):
        out.append(("kill_all", "interpreter code signals every process", True))
    if (
        _ENV_EXFIL.search(code)
        and _NET_SEND.search(code)
        and re.search(r"environ\b(?!\s*\.get)|process\.env\b(?!\.)|%ENV", code)
    ):
        out.append(("exfiltration", "interpreter code sends the environment over the network", True))
    return out


def shell_strings(code: str) -> list[str]:
    """String literals of ``code`` that it may run as commands (only when it calls something that spawns)."""
    if not _SPAWN.search(code):
        return []
    found: list[str] = []
    for m in _STRING.finditer(code):
        text = next(g for g in m.groups() if g is not None)
        if " " in text or "/" in text or ";" in text:
            found.append(text)
    for m in re.finditer(r"`([^`]{2,})`|qx[({/]([^)}/]{2,})[)}/]", code):
        found.append(m.group(1) or m.group(2))
    found.extend(_argv_calls(code))
    return found[:32]


_CALL_OPEN = re.compile(_SPAWN.pattern.replace("|`", "") + r"\s*\(")
_ARG_STRING = re.compile(r"'((?:[^'\\\n]|\\.)*)'|\"((?:[^\"\\\n]|\\.)*)\"")


def _argv_calls(code: str) -> list[str]:
    """Commands given as separate arguments or an argv list: ``run(['rm', '-rf', '/'])``, ``system('rm', '/')``."""
    out: list[str] = []
    for m in _CALL_OPEN.finditer(code):
        depth, end = 1, m.end()
        while end < len(code) and end - m.end() < 400 and depth:
            depth += {"(": 1, ")": -1}.get(code[end], 0)
            end += 1
        args = [q.group(q.lastindex or 1) for q in _ARG_STRING.finditer(code[m.end() : end])]
        if len(args) >= 2:
            out.append(" ".join(shlex.quote(a) for a in args))
        if len(out) >= 8:
            break
    return out


_SQL = re.compile(
    r"\b(drop\s+(database|schema|table|keyspace|collection|user|index|view|owned)\b|truncate\s+(table\s+)?[\w.\"`]+|"
    r"delete\s+from\s+[\w.\"`]+\s*(;|$|\)|\"|')|flushall\b|flushdb\b|dropdatabase\s*\(|\.drop\s*\(\s*\)|"
    r"deletemany\s*\(\s*\{\s*\}\s*\)|remove\s*\(\s*\{\s*\}\s*\)|alter\s+table\s+\S+\s+drop\b)",
    re.I,
)


_SQL_STRING = re.compile(r"'(?:[^']|'')*'")
_DROP_NAMES = re.compile(r"drop\s+(table|view)\s+(?:if\s+exists\s+)?((?:[\w.\"`]+\s*,\s*)*[\w.\"`]+)", re.I)
_TEMP_NAME = re.compile(r"(?:\w+\.)?(?:(?:tmp|temp|scratch)_\w*|\w+_(?:tmp|temp))", re.I)


def sql_findings(text: str) -> str | None:
    """The destructive statement in ``text`` (SQL, Redis, Mongo shell), or None.

    Single-quoted SQL string literals are data, not statements, so they are blanked first.
    """
    clean = _SQL_STRING.sub("''", text)
    for m in _SQL.finditer(clean):
        temp = _DROP_NAMES.match(clean, m.start())
        if temp and all(_TEMP_NAME.fullmatch(n.strip().strip('"`')) for n in temp.group(2).split(",")):
            continue  # dropping tables named as temporary (tmp_import, staging_tmp) loses no real data
        return m.group(0)
    return None
