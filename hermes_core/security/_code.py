"""Checks on text that is not shell: inline interpreter code (``python -c``, ``perl -e``...) and SQL.

Interpreter code is not parsed; it is scanned for a few unmistakable shapes (reverse shells, fork loops,
decoded-and-executed payloads, deletion of the root or home, writes to system files) and the string literals
it passes to a process-spawning call are handed back to be judged as shell commands.
"""

from __future__ import annotations

import re

__all__ = ["CodeFinding", "code_findings", "shell_strings", "sql_findings"]

CodeFinding = tuple[str, str, bool]  # category, reason, hardline

_SPAWN = re.compile(
    r"\b(os\.system|os\.popen|subprocess|popen|Popen|spawn|execl?p?e?|execv|system|shell_exec|passthru|proc_open|"
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
    r"/bin/(ba|z|da|k)?sh\b|pty\.spawn|\bdup2\b|\bexec\b|\bsubprocess\b|child_process|\bspawn\b|cmd\.exe|popen|system\("
)
_FORK_LOOP = re.compile(
    r"(while\s*(True|1|\(1\)|\(true\))\s*:?.{0,80}?\bfork\s*\()|(\bfork\s+while\s+fork)|(\bfork\s*\(\s*\)\s*while)|"
    r"(for\s*\(\s*;\s*;\s*\)\s*\{?\s*fork)|(loop\s*\{\s*fork)|(while\s*\(\s*(1|true)\s*\)\s*\{?\s*(pcntl_)?fork)",
    re.S,
)
_DECODE_EXEC = re.compile(
    r"\b(exec|eval|compile|Function|system)\s*\(\s*[^)]{0,80}?(b64decode|base64|a2b_|fromhex|unhexlify|decompress|"
    r"codecs\.decode|rot.?13|atob|pack\s*\(|Buffer\.from|unpack|decode\s*\(|chr\s*\(|\[::-1\]|reversed|marshal\.loads|urlopen|"
    r"requests\.get|urllib|http\.get|fetch\(|read\(\))",
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
    return found[:32]


_SQL = re.compile(
    r"\b(drop\s+(database|schema|table|keyspace|collection|user|index|view|owned)\b|truncate\s+(table\s+)?[\w.\"`]+|"
    r"delete\s+from\s+[\w.\"`]+\s*(;|$|\)|\"|')|flushall\b|flushdb\b|dropdatabase\s*\(|\.drop\s*\(\s*\)|"
    r"deletemany\s*\(\s*\{\s*\}\s*\)|remove\s*\(\s*\{\s*\}\s*\)|alter\s+table\s+\S+\s+drop\b)",
    re.I,
)


def sql_findings(text: str) -> str | None:
    """The destructive statement in ``text`` (SQL, Redis, Mongo shell), or None."""
    m = _SQL.search(text)
    return m.group(0) if m else None
