"""How dangerous a path named in a shell command is, judged from its text (the command has not run yet).

Paths are normalised without touching the disk: ``~``/``$HOME`` stay ``~``, ``//`` and ``/./`` collapse,
``..`` is resolved lexically, relative paths are joined to the workspace when one is known. ``UNKNOWN``
marks text only known at run time (an unset variable, a command substitution).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re

__all__ = [
    "UNKNOWN",
    "credential_path",
    "deletion_risk",
    "is_inside",
    "normalize",
    "secret_file",
    "write_risk",
]

UNKNOWN = "\x02"

SYSTEM_TOP = frozenset(
    {
        "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media", "/mnt",
        "/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/usr", "/var", "/snap", "/Users",
        "/System", "/Library", "/Applications", "/Volumes", "/private", "/nix", "/efi",
    }
)  # fmt: skip
_SYSTEM_TREES = (
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/root", "/sbin",
    "/sys", "/usr", "/var", "/System", "/Library", "/private/etc", "/private/var", "/nix", "/efi", "/snap",
)  # fmt: skip
_SAFE_UNDER_SYSTEM = ("/var/tmp", "/dev/shm", "/private/tmp", "/var/folders")
_HOME_CRITICAL = frozenset(
    {
        ".ssh", ".gnupg", ".config", ".local", ".aws", ".kube", ".azure", ".docker", "Documents", "Desktop",
        "Pictures", "Music", "Videos", "Downloads", "Library", ".password-store", ".mozilla", "snap", "src",
        "projects", "code", "work", "git", "repos", "Dropbox",
    }
)  # fmt: skip
RC_FILES = frozenset(
    {
        ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zprofile",
        ".zshenv", ".zlogin", ".zlogout", ".kshrc", ".cshrc", ".tcshrc", ".mkshrc", ".xprofile", ".xinitrc",
        ".xsession", ".inputrc", ".config/fish/config.fish", ".pam_environment", ".bash_aliases",
    }
)  # fmt: skip
HISTORY_FILES = frozenset(
    {".bash_history", ".zsh_history", ".history", ".sh_history", ".local/share/fish/fish_history",
     ".python_history", ".psql_history", ".mysql_history", ".node_repl_history", ".lesshst", ".viminfo"}
)  # fmt: skip
_PERSISTENCE = (
    ".config/autostart/",
    ".config/systemd/user/",
    "Library/LaunchAgents/",
    ".ssh/",
    ".config/hermes/",
)
_SAFE_DEVICES = re.compile(
    r"/dev/(null|zero|full|random|urandom|stdin|stdout|stderr|tty|console|ptmx)$|/dev/(fd|pts|shm)/"
)
_DISK_DEVICES = re.compile(
    r"/dev/((sd|hd|vd|xvd)[a-z]+\d*|nvme\d.*|mmcblk\d.*|disk\d.*|rdisk\d.*|mapper/.*|md\d*.*|"
    r"dm-\d+|loop\d+|sr\d+|mem|kmem|port|nbd\d+|zram\d+|root|cdrom|mtd.*|ubi.*|bcache.*)$"
)
_CREDENTIALS = (
    re.compile(r"~/\.ssh/(?!.*\.pub$)(?!known_hosts)(?!config$)(?!authorized_keys)[^/]+$"),
    re.compile(r"~/\.(aws|azure|gnupg|password-store|docker|kube)(/|$)"),
    re.compile(r"~/\.config/(gcloud|gh|hub|hermes|op|doctl|rclone|pulumi|heroku)(/|$)"),
    re.compile(r"~/\.(netrc|pgpass|pypirc|npmrc|git-credentials|vault-token|boto|s3cfg|my\.cnf|yarnrc)$"),
    re.compile(r"~/\.local/share/keyrings(/|$)|~/\.terraform\.d/credentials|~/\.cargo/credentials"),
    re.compile(r"~/Library/Keychains(/|$)"),
    re.compile(r"^/etc/(shadow|gshadow|master\.passwd|sudoers)(-|$)|^/etc/ssh/ssh_host_[^/]*_key$"),
    re.compile(r"^/proc/[^/]+/environ$|^/root(/|$)|^/var/lib/sss/|^/etc/krb5\.keytab$"),
)


def normalize(path: str, workspace: str | None = None) -> str:
    """Lexically normalise ``path`` (``~`` kept as ``~``); relative paths join ``workspace`` when given."""
    p = path.strip()
    if not p:
        return p
    if p.startswith("~"):
        rest = p[1:]
        if rest and not rest.startswith("/"):
            # ~user: someone's home directory
            user, _, tail = rest.partition("/")
            return posixpath.normpath("/home/" + user + ("/" + tail if tail else ""))
        tail = posixpath.normpath("/" + rest.lstrip("/")) if rest.strip("/") else ""
        return "~" + (tail if tail != "/" else "")
    if p.startswith("/"):
        return posixpath.normpath("/" + p.lstrip("/"))
    if workspace and not p.startswith(UNKNOWN):
        return posixpath.normpath(posixpath.join(workspace, p))
    return posixpath.normpath(p)


def is_inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _glob_hits(path: str, candidates: frozenset[str]) -> bool:
    return any(ch in path for ch in "*?[") and any(fnmatch.fnmatchcase(c, path) for c in candidates)


def _home_rel(path: str) -> str | None:
    if path == "~":
        return ""
    if path.startswith("~/"):
        return path[2:]
    return None


def deletion_risk(raw: str, workspace: str | None) -> tuple[str, str] | None:
    """("hardline"|"danger", what) when deleting ``raw`` (recursively) would be destructive."""
    if raw.startswith(UNKNOWN):
        rest = raw.lstrip(UNKNOWN)
        if rest in ("", "/", "/*", "/.") or (rest.startswith("/") and normalize(rest) in SYSTEM_TOP):
            return "danger", "a path built from a variable that may be empty (it would become /)"
        return None
    path = normalize(raw, workspace)
    own = _hermes_state(raw, path, workspace)
    if own is not None:
        return "hardline", own
    if workspace and is_inside(path, workspace) and not raw.startswith(("/", "~")) and ".." not in raw:
        return None
    if path in ("/", "/*", "/.*") or re.fullmatch(r"/[*?\[\]!.]+", path):
        return "hardline", "the root filesystem"
    home = _home_rel(path)
    if home is not None:
        if home in ("", "*", ".*", ".") or re.fullmatch(r"[*?.\[\]]+", home):
            return "hardline", "the home directory"
        top = home.split("/", 1)[0]
        if "/" not in home.rstrip("/*") and (top in _HOME_CRITICAL or _glob_hits(top, _HOME_CRITICAL)):
            return "danger", f"~/{top}"
        return None
    top = "/" + path.split("/")[1] if path.startswith("/") else ""
    if path in SYSTEM_TOP or path.rstrip("/*") in SYSTEM_TOP or _glob_hits(path, SYSTEM_TOP):
        return "hardline", f"the system directory {path}"
    if top in ("/home", "/Users") and path.count("/") <= 2:
        return "hardline", f"the home directory {path}"
    if any(is_inside(path, s) for s in _SAFE_UNDER_SYSTEM):
        return None
    if any(is_inside(path, t) for t in _SYSTEM_TREES):
        depth = path.count("/")
        if depth <= 2 and top in ("/usr", "/etc", "/boot", "/bin", "/sbin", "/lib", "/lib64", "/var"):
            return "hardline", f"the system directory {path}"
        return "danger", f"system path {path}"
    if not path.startswith("/") and re.fullmatch(r"\.\.(/\.\.)*(/\*)?", path):
        return "danger", "a parent directory of the workspace"
    if workspace and path.startswith("/") and is_inside(workspace, path):
        return "danger", "a directory that contains the workspace"
    return None


def write_risk(raw: str, workspace: str | None) -> tuple[str, str, str] | None:
    """(level, category, what) when writing/overwriting ``raw`` is dangerous."""
    if raw.startswith(UNKNOWN):
        return None
    path = normalize(raw, workspace)
    own = _hermes_state(raw, path, workspace)
    if own is not None:
        return "hardline", "hermes_state", own
    if path.startswith("/dev/"):
        if _SAFE_DEVICES.match(path):
            return None
        if path.startswith(("/dev/tcp/", "/dev/udp/")):
            return "hardline", "reverse_shell", f"a network socket {path}"
        if _DISK_DEVICES.match(path) or _glob_hits(path, frozenset({"/dev/sda", "/dev/nvme0n1", "/dev/vda"})):
            return "hardline", "disk_destruction", f"the block device {path}"
        return "danger", "system_file_write", f"the device {path}"
    if path == "/proc/sysrq-trigger":
        return "danger", "shutdown", "the kernel sysrq trigger"
    if path.startswith(("/proc/", "/sys/")):
        return "danger", "security_disable", f"kernel settings {path}"
    home = _home_rel(path)
    if home is not None:
        if home in RC_FILES:
            return "danger", "system_file_write", f"the shell startup file ~/{home}"
        if home in HISTORY_FILES:
            return "danger", "history_wipe", f"the history file ~/{home}"
        if any(home.startswith(p) for p in _PERSISTENCE):
            return "danger", "system_file_write", f"~/{home}"
        return None
    if path.startswith(("/etc/sudoers", "/etc/passwd", "/etc/shadow", "/etc/group", "/etc/pam.d/")):
        return "danger", "privilege_escalation", f"the account or sudo database {path}"
    if path.startswith("/var/spool/cron") or path.startswith("/etc/cron"):
        return "danger", "crontab", f"the cron tables {path}"
    if is_inside(path, "/var/log") or re.fullmatch(r"/var/run/utmp|/run/utmp", path):
        return "danger", "history_wipe", f"the system log {path}"
    if any(is_inside(path, s) for s in _SAFE_UNDER_SYSTEM):
        return None
    if any(is_inside(path, t) for t in _SYSTEM_TREES if t not in ("/var",)) or is_inside(path, "/var/lib"):
        return "danger", "system_file_write", f"the system file {path}"
    return None


def _hermes_state(raw: str, path: str, workspace: str | None) -> str | None:
    """hermes's own config, data, cache or plugins (see ``_protected``): never written by a command."""
    if UNKNOWN in path:
        return None
    from ._protected import path_risk

    reason = path_risk(path, workspace, raw)
    return f"{path}, {reason}" if reason else None


def credential_path(raw: str, workspace: str | None = None) -> str | None:
    """The normalised path when ``raw`` names a credential store or private key, else None."""
    if raw.startswith(UNKNOWN) or not raw:
        return None
    path = normalize(raw, workspace)
    path = re.sub(r"^/(home|Users)/[^/]+(?=/)", "~", path)
    if path in ("~/.ssh", "~/.gnupg", "~/.aws"):
        return path
    for rx in _CREDENTIALS:
        if rx.search(path):
            return path
    if path.startswith("~/.ssh/") and any(ch in path for ch in "*?["):
        return path
    return None


_DOTENV = re.compile(r"(^|/)\.env(\.(?!(example|sample|template|dist|defaults|schema)$)[\w.-]+)?$")


def secret_file(raw: str) -> bool:
    """Whether ``raw`` names a project secrets file (``.env``, ``.env.production``; not ``.env.example``)."""
    return bool(raw) and not raw.startswith(UNKNOWN) and bool(_DOTENV.search(raw))
