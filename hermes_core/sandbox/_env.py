"""The environment of a sandboxed command: an allow-list of harmless host variables, never a secret.

The host's environment is not copied: only locale, terminal, search-path and toolchain variables pass
(and not even those when their name looks like a credential, or a proxy URL carries a password), then the
variables the configuration names (``[sandbox] pass_env``) or sets (``[sandbox] env``), then the call's own.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["BASE_VARIABLES", "child_env", "git_identity", "is_secret_name"]

# Host variables a command may see: none of them holds a credential by itself.
BASE_VARIABLES = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "COLORTERM",
        "NO_COLOR", "PYENV_ROOT", "PYENV_VERSION", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV",
        "CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "GOPATH", "GOROOT", "GOBIN", "GOFLAGS", "NVM_DIR",
        "NVM_BIN", "NODE_PATH", "JAVA_HOME", "PKG_CONFIG_PATH", "LD_LIBRARY_PATH", "CC", "CXX", "CFLAGS",
        "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "MAKEFLAGS", "EDITOR", "VISUAL", "SSL_CERT_FILE", "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE", "PIP_DISABLE_PIP_VERSION_CHECK", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE",
    }
)  # fmt: skip
_PROXIES = frozenset({"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "FTP_PROXY"})
_USERINFO = re.compile(r"//[^/@]*@")
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "PRIVATE", "COOKIE")
_SECRET_PREFIXES = (
    "AWS_", "AZURE_", "GOOGLE_", "GCP_", "OPENAI_", "ANTHROPIC_", "GEMINI_", "MISTRAL_", "GROQ_", "COHERE_",
    "HF_", "HUGGINGFACE", "OPENROUTER_", "GITHUB_", "GH_", "GITLAB_", "SLACK_", "DISCORD_", "TELEGRAM_",
    "STRIPE_", "TWILIO_", "DATABASE_URL", "REDIS_URL", "NPM_", "PYPI_", "TWINE_", "DOCKER_", "HERMES_",
)  # fmt: skip
# What every command gets unless the configuration or the call says otherwise: no pagers, no prompts.
_DEFAULTS = {"PAGER": "cat", "GIT_PAGER": "cat", "TERM": "dumb"}
_FORCED = {"GIT_TERMINAL_PROMPT": "0"}


def is_secret_name(name: str) -> bool:
    """True for environment variable names that look like they hold credentials."""
    upper = name.upper()
    return any(word in upper for word in _SECRET_WORDS) or upper.startswith(_SECRET_PREFIXES)


def _harmless(name: str, value: str) -> bool:
    if is_secret_name(name):
        return False
    if name.upper() in _PROXIES:
        return not _USERINFO.search(value)
    return name in BASE_VARIABLES or name.startswith("LC_")


def child_env(
    host: Mapping[str, str],
    *,
    pass_env: Iterable[str] = (),
    config_env: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
    forced: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment for a sandboxed command.

    ``host`` is filtered to harmless variables; ``pass_env`` names host variables passed as they are (an
    explicit choice, so even secret-looking ones); ``config_env`` and then ``extra`` (the call's own) are
    set on top; ``forced`` (the sandbox's own variables, e.g. ``TMPDIR``) wins over everything.
    """
    env = {k: v for k, v in host.items() if _harmless(k, v)}
    for name in pass_env:
        if name in host:
            env[name] = host[name]
    for key, value in _DEFAULTS.items():
        env.setdefault(key, value)
    env.update(_FORCED)
    if config_env:
        env.update({str(k): str(v) for k, v in config_env.items()})
    if extra:
        env.update({str(k): str(v) for k, v in extra.items()})
    if forced:
        env.update(forced)
    return env


_GIT_USER = {
    "name": ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"),
    "email": ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"),
}


def git_identity(home: Path) -> dict[str, str]:
    """``GIT_AUTHOR_*``/``GIT_COMMITTER_*`` from the ``[user]`` section of the user's git config.

    The config files themselves stay hidden (they may hold credential helpers or tokens in URLs); only the
    name and e-mail pass, so ``git commit`` works inside the sandbox.
    """
    found: dict[str, str] = {}
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    for path in (Path(xdg) / "git" / "config", home / ".gitconfig"):  # later files win, as in git
        try:
            text = path.read_text("utf-8", "replace")
        except OSError:
            continue
        section = ""
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("["):
                section = line.strip("[]").strip().lower()
            elif section == "user" and "=" in line:
                key, _, value = line.partition("=")
                key = key.strip().lower()
                if key in _GIT_USER:
                    found[key] = value.split(" #")[0].strip().strip('"')
    return {var: value for key, value in found.items() for var in _GIT_USER[key] if value}
