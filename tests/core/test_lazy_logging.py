"""hermes loads ``logging`` only when a record needs it (``hermes_core._log``), and its records still reach the
host's handlers from the right place, or go nowhere when the host configured nothing (fresh interpreters). Load
plus the first definitions leaves out the other modules that only a call or a search needs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path


def _python(code: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HERMES_HOME": str(home), "HERMES_LOAD_PLUGINS": "builtin"}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=120
    )


def test_loading_and_the_first_definitions_import_only_what_they_need(tmp_path: Path) -> None:
    done = _python(
        """
        import sys
        from hermes_core import ToolSystem
        system = ToolSystem.load()
        assert len(system.definitions(enabled=["all"])) > 10
        print("logging" in sys.modules, "concurrent.futures" in sys.modules)
        print("hermes_core.selection._search_result" in sys.modules)  # made on the first search
        print("hermes_builtin.sessions" in sys.modules)  # session_search's check asks _fts5 alone
        print("hermes_core.stores" in sys.modules)  # the kanban board's SQL layer loads with its first call
        from hermes_core.selection import SearchResult, ToolMatch
        print(SearchResult(query="q", matches=[ToolMatch("t", "s", 1.0, "x", {})]).matches[0].name)
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False", "False", "False", "False", "t"]


BROKEN = "def broken(:\n"


def test_an_error_goes_to_the_host_handler_from_its_own_line_or_nowhere(tmp_path: Path) -> None:
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "broken.py").write_text(BROKEN)
    load = "from hermes_core import ToolSystem\nToolSystem.load()\n"
    quiet = _python(load, tmp_path)  # nothing configured: the hermes logger's NullHandler takes it
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""
    configured = _python(
        'import logging\nlogging.basicConfig(format="%(name)s %(filename)s %(message)s")\n' + load, tmp_path
    )
    assert configured.returncode == 0, configured.stderr
    # the record names the module that logged it, not the lazy logger in between
    assert "hermes.plugins _manager.py plugin 'dropin:broken' failed" in configured.stderr


def test_info_is_dropped_unloaded_and_kept_once_the_host_configures_logging(tmp_path: Path) -> None:
    dropped = _python(
        """
        import sys
        from hermes_core._log import get_logger
        get_logger("hermes.test").info("not configured")
        get_logger("hermes.test").debug("not configured")
        print("logging" in sys.modules)
        """,
        tmp_path,
    )
    assert dropped.returncode == 0, dropped.stderr
    assert dropped.stdout.split() == ["False"] and dropped.stderr == ""
    kept = _python(
        """
        from hermes_core._log import get_logger
        log = get_logger("hermes.test")
        import logging
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s %(lineno)d %(message)s")
        log.info("configured")
        log.debug("below the level")
        log.warning("warned")
        """,
        tmp_path,
    )
    assert kept.returncode == 0, kept.stderr
    assert kept.stderr.splitlines() == ["INFO hermes.test 6 configured", "WARNING hermes.test 8 warned"]
