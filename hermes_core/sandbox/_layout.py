"""What a sandboxed command can see: the file-system view both backends build, as plain data.

Visible: the system directories read-only (``/etc`` without its secrets), the interpreter running hermes and
the toolchains under ``$HOME`` read-only, the workspace read-write, the paths the configuration adds, a
private ``/tmp``. Everything else is absent, and hermes's own config, data, cache and plugin folders (with
the credential files of ``$HOME``) are hidden even when they lie inside something visible.
"""

from __future__ import annotations

import glob
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ToolError

__all__ = [
    "HOME_SECRETS",
    "Layout",
    "SandboxRefused",
    "build_layout",
    "hermes_dirs",
    "is_within",
]

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/etc")
# Entries of /etc never shown (relative to /etc; globs allowed).
ETC_SECRETS = (
    "shadow", "shadow-", "gshadow", "gshadow-", "sudoers", "sudoers.d", "master.passwd", "security/opasswd",
    "ssl/private", "krb5.keytab", "ssh/ssh_host_*_key", "ssh/ssh_host_*_key-cert.pub", "libvirt/secrets",
    "NetworkManager/system-connections", "wireguard", "letsencrypt", "docker/key.json",
)  # fmt: skip
# Credential files and folders of $HOME, hidden when $HOME (or part of it) is visible, e.g. as the workspace.
HOME_SECRETS = (
    ".ssh", ".aws", ".azure", ".gnupg", ".config", ".docker", ".kube", ".netrc", ".pgpass", ".git-credentials",
    ".gitconfig", ".npmrc", ".pypirc", ".yarnrc", ".password-store", ".local/share", ".cargo/credentials",
    ".cargo/credentials.toml", ".terraform.d", ".vault-token", ".boto", ".s3cfg", ".my.cnf", ".mozilla",
    ".bash_history", ".zsh_history", ".python_history", ".psql_history", ".mysql_history",
    ".node_repl_history", ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc",
    ".zprofile", ".zshenv", ".zlogin", ".pam_environment", ".claude", ".codex", ".m2/settings.xml",
    ".gradle/gradle.properties", ".condarc",
)  # fmt: skip
# Never shown whole: a PATH entry or toolchain inside one of these is skipped.
_NEVER_WHOLE = (
    "/",
    "/tmp",
    "/var/tmp",
    "/dev/shm",
    "/proc",
    "/sys",
    "/dev",
    "/run",
    "/var",
    "/home",
    "/root",
)
_PREFIX_DIRS = frozenset({"bin", "sbin", "shims"})


class SandboxRefused(ToolError):
    """The sandbox cannot build the walls this call needs; the message says why and what to change."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="sandbox", retryable=False)


def is_within(path: Path | str, root: Path | str) -> bool:
    """True when ``path`` is ``root`` or lies below it (both taken as given: resolve them first)."""
    p, r = str(path), str(root)
    return p == r or p.startswith(r.rstrip("/") + "/")


def _real(path: Path | str) -> Path:
    return Path(os.path.realpath(os.path.expanduser(str(path))))


def hermes_dirs() -> list[Path]:
    """Hermes's own config, data, cache and plugin folders: for ``HERMES_HOME`` and the platform defaults."""
    from .. import paths

    found = [paths.config_dir(), paths.data_dir(), paths.cache_dir(), paths.plugins_dir()]
    try:
        import platformdirs

        found += [
            Path(platformdirs.user_config_dir("hermes", appauthor=False)),
            Path(platformdirs.user_data_dir("hermes", appauthor=False)),
            Path(platformdirs.user_cache_dir("hermes", appauthor=False)),
        ]
    except ImportError:  # platformdirs is a dependency; without it HERMES_HOME is the only place
        pass
    return list(dict.fromkeys(_real(p) for p in found))


def _dedupe(paths: Iterable[Path]) -> list[Path]:
    """Distinct paths, dropping any that lies inside another one of the list."""
    ordered = sorted(set(paths), key=lambda p: (len(p.parts), str(p)))
    kept: list[Path] = []
    for path in ordered:
        if not any(is_within(path, k) for k in kept):
            kept.append(path)
    return kept


def interpreter_prefixes() -> list[Path]:
    """The folders of the Python running hermes (virtual environment and base installation)."""
    found = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    exe = os.path.realpath(sys.executable) if sys.executable else ""
    if exe:
        found.add(os.path.dirname(os.path.dirname(exe)))
    return [_real(p) for p in found if p and os.path.isdir(p)]


@dataclass(slots=True)
class Layout:
    """The view of one sandboxed call (all paths real: symlinks resolved).

    ``system`` holds ``(path, symlink target or None)`` for the system directories; ``read_only`` and
    ``read_write`` the other visible trees; ``hidden`` what must stay invisible although it lies inside a
    visible tree (the backend masks it or refuses); ``etc_hidden`` the secrets of ``/etc``; ``protected`` the
    host's own code inside a writable tree (kept read-only); ``hermes`` hermes's own folders; ``home`` the
    user's home, empty inside the sandbox apart from what is listed; ``tmp`` the host folder shown as ``/tmp`` (one
    per session, shared by every tool of it), None for a fresh empty ``/tmp`` per call.
    """

    home: Path
    workspace: Path
    system: list[tuple[Path, str | None]] = field(default_factory=list)
    etc_hidden: list[Path] = field(default_factory=list)
    read_only: list[Path] = field(default_factory=list)
    read_write: list[Path] = field(default_factory=list)
    hidden: list[Path] = field(default_factory=list)
    protected: list[Path] = field(default_factory=list)
    hermes: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tmp: Path | None = None

    def visible(self) -> list[Path]:
        return [p for p, target in self.system if target is None] + self.read_only + self.read_write

    def sees(self, path: Path) -> bool:
        """Whether ``path`` lies inside a visible tree (hidden parts excepted)."""
        if any(is_within(path, h) for h in self.hidden) or any(is_within(path, h) for h in self.etc_hidden):
            return False
        return any(is_within(path, v) for v in self.visible())

    def writable(self, path: Path) -> bool:
        return self.sees(path) and any(is_within(path, w) for w in self.read_write)


def _unsafe_reason(path: Path, home: Path, secrets: Sequence[Path], protected: Sequence[Path]) -> str:
    """Why ``path`` may not be shown whole ("" when it may)."""
    if str(path) in _NEVER_WHOLE or is_within(home, path):
        return "it contains the home folder or is a shared system folder"
    if is_within(path, "/tmp") or is_within(path, "/var/tmp") or is_within(path, "/dev/shm"):
        return "it lies in a shared temporary folder"
    if (is_within(path, "/home") or is_within(path, "/root")) and not is_within(path, home):
        return "it lies in another user's home"
    for secret in secrets:
        if is_within(path, secret) or (is_within(secret, path) and os.path.lexists(secret)):
            return f"it holds {secret}"
    for own in protected:
        if is_within(path, own) or is_within(own, path):
            return f"it holds hermes's own folder {own}"
    return ""


def _path_entries(
    path_env: str, home: Path, secrets: Sequence[Path], protected: Sequence[Path]
) -> list[Path]:
    """The folders of ``PATH`` worth showing: a ``bin``/``shims`` folder brings its prefix when that is safe."""
    out: list[Path] = []
    for entry in path_env.split(os.pathsep):
        if not entry or not os.path.isabs(entry) or not os.path.isdir(entry):
            continue
        real = _real(entry)
        if any(is_within(real, s) for s in SYSTEM_DIRS):
            continue
        candidates = [real]
        if real.name in _PREFIX_DIRS and real.parent != home and len(real.parent.parts) > 1:
            candidates.insert(0, real.parent)
        for candidate in candidates:
            if not _unsafe_reason(candidate, home, secrets, protected):
                out.append(candidate)
                break
    return out


def build_layout(
    *,
    workspace: Path,
    home: Path,
    path_env: str,
    toolchains: Sequence[str],
    extra_read_only: Sequence[Path] = (),
    extra_read_write: Sequence[Path] = (),
    protected_hidden: Sequence[Path] = (),
    protected_read_only: Sequence[Path] = (),
    tmp: Path | None = None,
) -> Layout:
    """Work out the view for a call in ``workspace``; raises ``SandboxRefused`` for a workspace it cannot wall."""
    ws = _real(workspace)
    home = _real(home)
    if str(ws) == "/":
        raise SandboxRefused(
            "the workspace is /, so the sandbox would have no walls; choose a project folder"
        )
    from .. import paths

    hermes_home = paths.hermes_home()
    home_root = _real(hermes_home) if hermes_home is not None else None
    for own in protected_hidden:
        # a workspace inside HERMES_HOME itself is fine (only the workspace is shown, not its siblings);
        # one inside its data, cache or plugins folder is not
        if is_within(ws, own) and own != home_root:
            raise SandboxRefused(f"the workspace {ws} lies inside hermes's own folder {own}")
    layout = Layout(home=home, workspace=ws, hermes=list(protected_hidden), tmp=_real(tmp) if tmp else None)
    for name in SYSTEM_DIRS:
        if os.path.islink(name):
            layout.system.append((Path(name), os.readlink(name)))
        elif os.path.isdir(name):
            layout.system.append((Path(name), None))
    etc_hidden: set[Path] = set()
    for pattern in ETC_SECRETS:
        etc_hidden.update(Path(p) for p in glob.glob(os.path.join("/etc", pattern)))
    layout.etc_hidden = sorted(etc_hidden)
    secrets = [home / s for s in HOME_SECRETS]
    protected = list(protected_hidden)
    prefixes = interpreter_prefixes()
    read_only = list(prefixes)
    for rel in toolchains:
        candidate = _real(home / rel)
        if not candidate.exists():
            continue
        reason = _unsafe_reason(candidate, home, secrets, protected)
        if reason:
            layout.notes.append(f"toolchain {candidate} is not shown: {reason}")
        else:
            read_only.append(candidate)
    read_only += _path_entries(path_env, home, secrets, protected)
    read_only += [_real(p) for p in extra_read_only if os.path.exists(p)]
    read_write = [ws] + [_real(p) for p in extra_read_write if os.path.exists(p)]
    for path in read_only + read_write:
        if str(path) == "/":
            raise SandboxRefused("a configured sandbox path is /, so the sandbox would have no walls")
    layout.read_write = _dedupe(read_write)
    layout.read_only = [p for p in _dedupe(read_only) if not any(is_within(p, w) for w in layout.read_write)]
    # the host's own code stays read-only even inside the workspace: writing there would run on the host
    own_code = [*prefixes, *(_real(p) for p in protected_read_only if os.path.exists(p))]
    layout.protected = _dedupe(p for p in own_code if any(is_within(p, w) for w in layout.read_write))
    visible = layout.visible()
    hidden = [p for p in [*secrets, *protected] if any(is_within(p, v) for v in visible)]
    layout.hidden = _dedupe(hidden)
    return layout
