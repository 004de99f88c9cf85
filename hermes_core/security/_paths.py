"""The path guard: ``check_path(path, op, workspace) -> PathVerdict`` ("allow", "ask" or "refuse").

The path is validated (``MalformedPathError`` for NUL bytes, empty paths, lone surrogates, components over
255 bytes), then ``~``, ``..``, ``//``, ``/./`` and symlinks are resolved before anything is decided, so a
symlink in the workspace that points at a private key is judged as the key.

Refused: credential stores and private keys (read and write), ``/proc/*/environ``, hermes's own state (writes
into its config, data, cache, plugins and results directories, for ``HERMES_HOME`` and the platform defaults,
existing or not; reads of its configuration and approvals: see ``_protected``), and writes to system
directories. Asked: shell startup files, SSH and git config, persistence points, ``.git/hooks``, ``.env``
files, files the host runs later (``.git/info``, submodule config and hooks, a venv's ``*.pth``,
``sitecustomize.py`` and ``usercustomize.py``, ``.envrc``, ``.vscode`` tasks and settings, ``.idea``), and
anything outside the workspace. Allowed: the workspace, ``/tmp``, and reading public system files
such as ``/etc/os-release``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from ._protected import ProtectedRoot, judge_path
from ._verdicts import MalformedPathError, PathVerdict

__all__ = ["check_path", "resolve_path"]

_MAX_PATH_BYTES = 4096
_SYSTEM_WRITE = (
    "/etc", "/usr", "/boot", "/proc", "/sys", "/dev", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
    "/var", "/opt", "/root", "/srv", "/snap", "/System", "/Library", "/Applications", "/private/etc",
    "/private/var", "/nix", "/efi", "/run", "/home", "/Users",
)  # fmt: skip
_TEMP = ("/tmp", "/var/tmp", "/private/tmp", "/dev/shm")
_DEV_WRITABLE = ("/dev/null", "/dev/stdout", "/dev/stderr")
_PUBLIC_READ = (
    "/etc",
    "/usr",
    "/opt",
    "/proc",
    "/sys",
    "/var/log",
    "/lib",
    "/lib64",
    "/bin",
    "/sbin",
    "/snap",
    "/nix",
)
_SECRET_SYSTEM = re.compile(
    r"^/etc/(shadow|gshadow|master\.passwd|sudoers|security/opasswd|krb5\.keytab)(-|$|\.d/)|^/etc/ssh/ssh_host_[^/]*_key$|"
    r"^/etc/ssl/private(/|$)|^/proc/[^/]+/(environ|mem|maps|auxv)$|^/proc/kcore$|^/dev/(sd|nvme|hd|vd|xvd|mmcblk|disk|mem|kmem)"
)
_HOME_CRED_DIRS = (
    ".aws", ".azure", ".config/gcloud", ".gnupg", ".password-store", ".local/share/keyrings", "Library/Keychains",
    ".config/gh", ".config/hub", ".kube", ".docker", ".config/op", ".config/doctl", ".config/rclone",
    ".terraform.d", ".cargo/credentials", ".config/pulumi", ".vault-token",
)  # fmt: skip
_HOME_CRED_FILES = (".netrc", "_netrc", ".pgpass", ".pypirc", ".git-credentials", ".my.cnf", ".boto", ".s3cfg",
                    ".cargo/credentials.toml", ".config/git/credentials")  # fmt: skip
_SSH_PUBLIC = ("config", "known_hosts", "known_hosts.old", "authorized_keys", "authorized_keys2")
_RC = (
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile", ".zshrc", ".zprofile",
    ".zshenv", ".zlogin", ".zlogout", ".kshrc", ".cshrc", ".tcshrc", ".xprofile", ".xinitrc", ".xsession",
    ".inputrc", ".pam_environment", ".config/fish/config.fish", ".gitconfig", ".config/git/config",
    ".ssh/config", ".ssh/authorized_keys", ".ssh/rc", ".npmrc", ".vimrc", ".pythonrc", ".curlrc", ".wgetrc",
)  # fmt: skip
_PERSISTENCE = (".config/autostart", ".config/systemd/user", "Library/LaunchAgents", ".config/upstart",
                ".local/share/systemd", ".config/environment.d")  # fmt: skip
_PERSISTENCE_SYSTEM = (
    "/var/spool/cron",
    "/etc/cron",
    "/etc/systemd",
    "/Library/LaunchDaemons",
    "/Library/LaunchAgents",
)


# Files the host runs (or that configure what it runs) later, outside the sandbox: the file tools ask first.
# The sandbox keeps the same files read-only inside (``[sandbox] host_run``, hermes_core.sandbox).
_HOST_RUN = re.compile(
    r"/\.git/(info|modules/[^/]+/(config|hooks|info))(/|$)|/site-packages/([^/]+\.pth|sitecustomize\.py|"
    r"usercustomize\.py)$|/\.envrc$|/\.vscode/(tasks|settings|launch)\.json$|/\.idea(/|$)"
)


def _validate(path: str | os.PathLike[str]) -> str:
    try:
        text = os.fspath(path)
    except TypeError as exc:
        raise MalformedPathError(f"not a path: {type(path).__name__}") from exc
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedPathError("the path is not valid UTF-8") from exc
    if not text or not text.strip():
        raise MalformedPathError("the path is empty")
    if "\x00" in text:
        raise MalformedPathError("the path contains a NUL byte")
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise MalformedPathError("the path contains a lone surrogate (invalid unicode)") from exc
    if len(encoded) > _MAX_PATH_BYTES:
        raise MalformedPathError(f"the path is longer than {_MAX_PATH_BYTES} bytes")
    for part in text.split("/"):
        if len(part.encode("utf-8")) > 255:
            raise MalformedPathError(f"a path component is longer than 255 bytes ({part[:20]}...)")
    return text


def _real(path: str) -> str:
    real = os.path.realpath(path)
    if real.startswith("//"):
        real = "/" + real.lstrip("/")
    return real


def resolve_path(path: str | os.PathLike[str], workspace: str | Path | None = None) -> Path:
    """Validate ``path`` and resolve ``~``, relative parts and symlinks (relative to ``workspace`` when given)."""
    text = os.path.expanduser(_validate(path))
    if not os.path.isabs(text):
        base = os.fspath(workspace) if workspace is not None else os.getcwd()
        text = os.path.join(base, text)
    try:
        return Path(_real(text))
    except (OSError, ValueError) as exc:
        raise MalformedPathError(f"the path cannot be resolved: {exc}") from exc


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _npmrc_has_token(path: str) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read(65536)
    except OSError:
        return False
    return bool(re.search(r"_authToken|_auth\s*=|_password|//.*:(token|password)", text))


def _classify(
    real: str,
    op: str,
    home: str,
    ws: str | None,
    lexical: str = "",
    spaces: tuple[str, ...] = (),
    roots: list[ProtectedRoot] | None = None,
) -> tuple[str, str]:
    rel_home = real[len(home) + 1 :] if home and home != "/" and real.startswith(home + "/") else None
    if _SECRET_SYSTEM.search(real):
        return "refuse", "a system secret or raw device"
    if rel_home is not None:
        if rel_home.startswith(".ssh/") and rel_home[5:] not in _SSH_PUBLIC and not rel_home.endswith(".pub"):
            return "refuse", "an SSH private key or key material"
        if any(rel_home == d or rel_home.startswith(d + "/") for d in _HOME_CRED_DIRS):
            return "refuse", "a credential store"
        if rel_home in _HOME_CRED_FILES:
            return "refuse", "a credential file"
        if rel_home == ".npmrc" and _npmrc_has_token(real):
            return "refuse", "an .npmrc that holds a registry token"
    own = judge_path(lexical, real, op, spaces, roots)
    if own is not None:
        return "refuse", own
    inside = ws is not None and _inside(real, ws)
    name = os.path.basename(real)
    if rel_home is not None and (rel_home in _RC or any(_inside(rel_home, p) for p in _PERSISTENCE)):
        return "ask", "a shell startup, SSH/git config or login persistence file"
    if any(_inside(real, p) for p in _PERSISTENCE_SYSTEM):
        if op == "write":
            return "refuse", "a system persistence point (cron, systemd, launchd)"
        return "ask", "a system persistence point (cron, systemd, launchd)"
    if "/.git/hooks/" in real + "/" or real.endswith("/.git/config") or real[-11:] == "/.git/hooks":
        return "ask", "git hooks or git config (they run or configure code)"
    if _HOST_RUN.search(real):
        return (
            "ask",
            "a file the host runs later (git, a virtual environment's startup files, .envrc, editor tasks)",
        )
    if name == ".env" or name.startswith(".env.") or name.endswith(".env"):
        return "ask", "an .env file (it usually holds secrets)"
    if inside:
        return "allow", "inside the workspace"
    if rel_home is None and any(_inside(real, t) for t in _TEMP):
        return "allow", "a temporary directory"
    if op == "write":
        if real in _DEV_WRITABLE:
            return "allow", "a null or standard stream"
        if real == "/" or (any(_inside(real, s) for s in _SYSTEM_WRITE) and not (rel_home is not None)):
            return "refuse", "a system file or directory"
        return "ask", "outside the workspace"
    if any(_inside(real, p) for p in _PUBLIC_READ) or real in ("/dev/null", "/dev/urandom", "/dev/zero"):
        return "allow", "a public system file"
    return "ask", "outside the workspace"


def check_path(
    path: str | os.PathLike[str], op: Literal["read", "write"], workspace: str | Path | None
) -> PathVerdict:
    """Decide whether ``op`` on ``path`` is allowed, needs a human ("ask"), or is refused."""
    if op not in ("read", "write"):
        raise ValueError(f"op must be 'read' or 'write', not {op!r}")
    ws = _real(os.fspath(workspace)) if workspace is not None else None
    resolved = resolve_path(path, ws)
    real = str(resolved)
    home = _real(os.path.expanduser("~"))
    given = os.path.expanduser(_validate(path))
    lexical = os.path.normpath(
        os.path.join(os.fspath(workspace) if workspace is not None else os.getcwd(), given)
    )
    spaces = (ws, os.path.abspath(os.fspath(workspace))) if workspace is not None and ws is not None else ()
    decision, reason = _classify(real, op, home, ws, lexical or real, spaces)
    inside = ws is not None and _inside(real, ws)
    return PathVerdict(decision, f"{op} {real}: {reason}", resolved, op, inside)  # type: ignore[arg-type]
