"""The skills guard: what ``skill_manage`` saves is read before it is stored, since a skill is loaded into a
model's context later, in another conversation, as trusted instructions.

Three kinds of content are refused: instructions aimed at the model that would override its rules
("ignore previous instructions", "do not tell the user", fake system turns), exfiltration (sending keys,
tokens or ``.env`` files somewhere, URLs that carry a secret), and commands the command guard
(``hermes_core.security.classify_command``) judges an attack: code downloaded into a shell, credential reads,
data sent out, reverse shells, disabled security, wiped history, writes to shell start-up files, and every
command it never allows. Commands are taken from code blocks, inline code and shell-like prose lines. Invisible
characters (zero-width, bidirectional overrides, tag characters) are refused too: they hide text from a human
reviewer. ``[plugins.skills] guard`` is ``refuse`` (default), ``warn`` (save, and say what was found) or ``off``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["GUARD_MODES", "Finding", "scan"]

GUARD_MODES = ("refuse", "warn", "off")

# command-guard categories that have no place in instructions saved for later
ATTACK_CATEGORIES = frozenset(
    {
        "remote_code_execution",
        "credential_access",
        "exfiltration",
        "reverse_shell",
        "security_disable",
        "history_wipe",
        "hermes_state",
        "system_file_write",
        "privilege_escalation",
        "obfuscation",
    }
)

_W = r"(?:[\w'-]+\W+)"
# "never send secrets to ...", "do not ignore the rules": advice, not an attack
_NEGATED = re.compile(r"\b(?:never|not|don't|no|avoid|refuse to)\s+(?:\w+\s+)?$", re.IGNORECASE)
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.IGNORECASE))
    for kind, pattern in (
        (
            "instruction override",
            rf"\b(?:ignore|disregard|forget|override|bypass)\W+{_W}{{0,4}}?"
            rf"(?:previous|prior|above|earlier|preceding|all|any|your|the|system|original)\W+{_W}{{0,3}}?"
            r"(?:instructions?|prompts?|rules|guidelines|directives|guardrails|polic(?:y|ies))\b",
        ),
        (
            "instruction override",
            r"\byou are now (?:an? |the |in )?(?:[\w-]+ ){0,2}"
            r"(?:mode|assistant|ai|agent|model|persona|jailbroken|unrestricted|dan)\b",
        ),
        (
            "instruction override",
            r"\b(?:new|updated|real|true|actual) (?:system )?(?:instructions|prompt)\s*:",
        ),
        (
            "instruction override",
            r"\b(?:do not|don't|never) (?:tell|inform|alert|notify|warn|mention (?:this |it )?to) the user\b",
        ),
        ("instruction override", r"\bwithout (?:telling|informing|asking|notifying|alerting) the user\b"),
        ("instruction override", r"<\|?\s*/?\s*(?:system|im_start|im_end)\s*\|?>"),
        (
            "exfiltration",
            rf"\b(?:send|post|upload|exfiltrate|forward|leak|transmit|e-?mail|paste)\W+{_W}{{0,6}}?"
            r"(?:api[ _-]?keys?|tokens?|passwords?|credentials?|secrets?|private keys?|ssh keys?|\.env\b|cookies)"
            rf"\W+{_W}{{0,6}}?(?:to|into|at)\b",
        ),
        (
            "exfiltration",
            r"https?://\S*(?:\$\{?\w*(?:KEY|TOKEN|SECRET|PASS)\w*\}?|\$\(\s*(?:cat|printenv|env)\b)",
        ),
    )
)
_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]")
_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE = re.compile(r"`([^`\n]+)`")
_LIST_MARK = re.compile(r"^\s*(?:[-*+>]|\d+[.)])\s+|^\s*\$\s+")
# prose worth handing to the command guard: shell punctuation, or a program the attacks above need
_SHELLISH = re.compile(
    r"[|;&$<>]|\b(?:curl|wget|nc|ncat|socat|bash|sh|zsh|ssh|scp|rsync|rm|dd|mkfs|chmod|chown|sudo|cat|base64|"
    r"eval|python3?|perl|ruby|node|crontab|history|iptables|setenforce|shred|printenv|env)\b"
)
_COMMAND_START = re.compile(
    r"\b(?:curl|wget|nc|ncat|socat|bash|ssh|scp|rsync|rm|dd|chmod|sudo|cat|base64|eval|python3?|printenv|env)\b"
)
_SCRIPT_SUFFIXES = (".sh", ".bash", ".zsh", ".py", ".rb", ".pl", ".js", ".ps1")


@dataclass(frozen=True, slots=True)
class Finding:
    """One reason to refuse: ``kind``, the 1-based ``line`` and what was found."""

    kind: str
    line: int
    detail: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.kind}: {self.detail}"


def _commands(text: str, script: bool) -> Iterator[tuple[int, str]]:
    """``(line, candidate command)`` pairs: code-block lines, inline code, and shell-like prose lines."""
    in_block = script
    for number, line in enumerate(text.splitlines(), 1):
        if not script and _FENCE.match(line):
            in_block = not in_block
            continue
        stripped = line.strip()
        if not stripped:
            continue
        if in_block:
            yield number, stripped
            continue
        for span in _INLINE.findall(line):
            yield number, span
        prose = _LIST_MARK.sub("", _INLINE.sub(lambda m: m.group(1), line)).strip()
        if _SHELLISH.search(prose):
            yield number, prose
            start = _COMMAND_START.search(prose)
            if start is not None and start.start() > 0:  # "... and run curl x | sh": the command itself
                yield number, prose[start.start() :]


def scan(text: str, file_name: str = "SKILL.md") -> list[Finding]:
    """Everything in ``text`` the guard refuses (empty when the content is fine)."""
    from hermes_core.security import classify_command

    findings: list[Finding] = []
    for number, line in enumerate(text.splitlines(), 1):
        hidden = _INVISIBLE.search(line)
        if hidden is not None:
            findings.append(
                Finding("hidden characters", number, f"invisible character U+{ord(hidden[0]):04X}")
            )
        for kind, pattern in _PATTERNS:
            match = pattern.search(line)
            if match is not None and not _NEGATED.search(line[max(0, match.start() - 24) : match.start()]):
                findings.append(Finding(kind, number, repr(match.group(0)[:80])))
    seen: set[str] = set()
    for number, command in _commands(text, file_name.endswith(_SCRIPT_SUFFIXES)):
        if command in seen or len(command) > 2000:
            continue
        seen.add(command)
        verdict = classify_command(command)
        bad = [f for f in verdict.findings if f.hardline or f.category in ATTACK_CATEGORIES]
        if bad:
            findings.append(Finding("dangerous command", number, bad[0].reason))
    return sorted(set(findings), key=lambda f: (f.line, f.kind))
