"""The isolated import check: each plugin imported in a fresh interpreter, timed, its error caught."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..plugins import PluginRecord

__all__ = ["ImportCheck", "import_check"]

_MARK = "HERMES-DOCTOR-RESULT:"

# Runs in a fresh interpreter: hermes_core is imported first so only the plugin's own import is timed.
_PROBE = """
import importlib, importlib.util, json, sys, time
import hermes_core
kind, target, attr = sys.argv[1], sys.argv[2], sys.argv[3]
start = time.perf_counter()
try:
    if kind == "file":
        spec = importlib.util.spec_from_file_location("hermes_doctor_probe", target)
        module = importlib.util.module_from_spec(spec)
        sys.modules["hermes_doctor_probe"] = module
        spec.loader.exec_module(module)
    else:
        obj = importlib.import_module(target)
        for part in filter(None, attr.split(".")):
            obj = getattr(obj, part)
    result = {"ok": True, "error": None}
except BaseException as err:
    result = {"ok": False, "error": type(err).__name__ + ": " + str(err)}
result["ms"] = (time.perf_counter() - start) * 1000
sys.stdout.flush()
print("\\n" + MARK + json.dumps(result), flush=True)
""".replace("MARK", repr(_MARK))


@dataclass(slots=True)
class ImportCheck:
    """The result of importing a plugin in a fresh interpreter; ``skipped`` says why it was not tried."""

    ok: bool
    ms: float | None = None
    error: str | None = None
    skipped: str = ""


def import_check(record: PluginRecord, timeout: float = 30.0) -> ImportCheck:
    """Import the plugin in a subprocess of this interpreter and time it; never runs for blocked plugins."""
    if record.status == "blocked":
        return ImportCheck(ok=True, skipped="blocked")
    if record.source == "drop-in":
        if record.status == "skipped" or record.path is None:
            return ImportCheck(ok=True, skipped="not a plugin file")
        argv = ["file", record.path, ""]
    elif record.source == "entry point" and record.module:
        module, _, attr = record.module.partition(":")
        argv = ["module", module.strip(), attr.strip()]
    else:
        return ImportCheck(ok=True, skipped="registered in-process")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _PROBE, *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return ImportCheck(
            ok=False, ms=(time.perf_counter() - started) * 1000, error=f"import took over {timeout:g} s"
        )
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(_MARK):
            data = json.loads(line[len(_MARK) :])
            return ImportCheck(ok=bool(data["ok"]), ms=float(data["ms"]), error=data["error"])
    tail = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
    return ImportCheck(ok=False, error=f"the import ended the interpreter: {tail}")
