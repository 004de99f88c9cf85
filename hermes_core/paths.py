"""Where hermes keeps its files: config, data, cache, the drop-in plugin folder and the log file.

``HERMES_HOME`` relocates all of them together (``$HERMES_HOME/config.toml``, ``data/``, ``cache/``,
``plugins/``); otherwise the platform's user directories (platformdirs) are used.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir", "config_dir", "config_file", "data_dir", "hermes_home", "log_file", "plugins_dir"]

_APP = "hermes"


def hermes_home() -> Path | None:
    """The ``HERMES_HOME`` directory, when set."""
    value = os.environ.get("HERMES_HOME")
    return Path(value).expanduser() if value else None


def config_dir() -> Path:
    home = hermes_home()
    if home is not None:
        return home
    import platformdirs

    return Path(platformdirs.user_config_dir(_APP, appauthor=False))


def config_file() -> Path:
    """The default configuration file (``--config`` and ``ToolSystem.load(config=...)`` override it)."""
    return config_dir() / "config.toml"


def data_dir() -> Path:
    home = hermes_home()
    if home is not None:
        return home / "data"
    import platformdirs

    return Path(platformdirs.user_data_dir(_APP, appauthor=False))


def cache_dir() -> Path:
    home = hermes_home()
    if home is not None:
        return home / "cache"
    import platformdirs

    return Path(platformdirs.user_cache_dir(_APP, appauthor=False))


def plugins_dir() -> Path:
    """The drop-in plugin folder: ``$HERMES_HOME/plugins`` or ``<user data dir>/plugins``."""
    home = hermes_home()
    if home is not None:
        return home / "plugins"
    return data_dir() / "plugins"


def log_file() -> Path:
    """The ``hermes`` command's log (``<data>/logs/hermes.log``, rotated): what "the details are in the log"
    refers to, tracebacks included."""
    return data_dir() / "logs" / "hermes.log"
