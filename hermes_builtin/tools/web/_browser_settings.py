"""``[plugins.browser]`` and whether the browser can run at all: light enough for the tools' check (the engine,
with asyncio and Playwright behind it, loads with the first browser call)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from hermes_core.fileio import which

from ._web_settings import SettingsError, _int, _number, policy_from

if TYPE_CHECKING:
    from hermes_core.security import NetworkPolicy

__all__ = [
    "CANDIDATES",
    "MIN_PLAYWRIGHT",
    "SECTION",
    "BrowserSettings",
    "find_executable",
    "playwright_problem",
]

SECTION = "browser"
MIN_PLAYWRIGHT = (1, 65)
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")

DIALOG_POLICIES = ("ask", "accept", "dismiss")  # [plugins.browser] dialogs: what a page's alert/confirm gets


class BrowserSettings(NamedTuple):
    """``[plugins.browser]``; ``allow_networks``/``resolve`` fall back to ``[plugins.web]``'s."""

    executable: str
    width: int = 1280
    height: int = 800
    navigation_timeout: float = 30.0
    action_timeout: float = 10.0
    snapshot_chars: int = 12_000
    eval_chars: int = 8_000
    eval_timeout: float = 30.0
    dialogs: str = "ask"
    extra_args: tuple[str, ...] = ()
    policy: NetworkPolicy | None = None

    @classmethod
    def from_config(cls, section: Mapping[str, Any], web: Mapping[str, Any]) -> BrowserSettings:
        if section.get("enabled", True) is False:
            raise SettingsError(f"disabled by [plugins.{SECTION}] enabled = false")
        executable = find_executable(section.get("executable"))
        args = section.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise SettingsError(f"[plugins.{SECTION}] args must be a list of strings")
        own_policy = "allow_networks" in section or "resolve" in section
        dialogs = section.get("dialogs", "ask")
        if dialogs not in DIALOG_POLICIES:
            raise SettingsError(
                f"[plugins.{SECTION}] dialogs must be ask, accept or dismiss, got {dialogs!r}"
            )
        return cls(
            executable=executable,
            width=_int(section, SECTION, "width", 1280, 200),
            height=_int(section, SECTION, "height", 800, 200),
            navigation_timeout=_number(section, SECTION, "navigation_timeout", 30.0),
            action_timeout=_number(section, SECTION, "action_timeout", 10.0),
            snapshot_chars=_int(section, SECTION, "snapshot_chars", 12_000, 1000),
            eval_chars=_int(section, SECTION, "eval_chars", 8_000, 100),
            eval_timeout=_number(section, SECTION, "eval_timeout", 30.0),
            dialogs=dialogs,
            extra_args=tuple(args),
            policy=policy_from(section, SECTION) if own_policy else policy_from(web, "web"),
        )


def find_executable(configured: Any) -> str:
    """The Chromium to drive: the configured path, else the first known name on the PATH."""
    if configured is not None:
        if not isinstance(configured, str) or not configured.strip():
            raise SettingsError(f"[plugins.{SECTION}] executable must be a path")
        path = which(configured.strip())
        if path is None:
            raise SettingsError(f"[plugins.{SECTION}] executable {configured!r} is not an executable file")
        return path
    for name in CANDIDATES:
        path = which(name)
        if path:
            return path
    raise SettingsError(
        "no Chromium found on the PATH: install the chromium package, or set [plugins.browser] executable"
    )


def playwright_problem() -> str | None:
    """Why Playwright cannot be used (None when a recent enough version is installed), without importing it
    (nor ``importlib.metadata``: its version is read from the name of its ``dist-info`` folder)."""
    import importlib.util

    spec = importlib.util.find_spec("playwright")
    if spec is None:
        return "Playwright is not installed (pip install 'hermes-tools[browser]')"
    version = _installed_version(spec)
    if version is None:
        return None
    numbers = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
    if numbers < MIN_PLAYWRIGHT:
        need = ".".join(map(str, MIN_PLAYWRIGHT))
        return f"Playwright {version} is too old; hermes-tools needs >= {need} (pip install -U playwright)"
    return None


def _installed_version(spec: Any) -> str | None:
    """The version in ``playwright-<version>.dist-info`` beside the package, else from its metadata."""
    import os

    for location in spec.submodule_search_locations or ():
        folder = os.path.dirname(str(location))
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if name.startswith("playwright-") and name.endswith(".dist-info"):
                return name[len("playwright-") : -len(".dist-info")]
    import importlib.metadata

    try:
        return str(importlib.metadata.version("playwright"))
    except importlib.metadata.PackageNotFoundError:
        return None
