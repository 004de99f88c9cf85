"""``run_doctor``: every check, in order, over one loaded tool system."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from typing import TYPE_CHECKING

from ._imports import import_check
from ._mcp import mcp_problems
from ._plugins import hook_problems, record_problems, version_problems
from ._report import DoctorReport, unique
from ._setup import environment_problems, override_problems, sandbox_problems, toolset_problems
from ._tools import check_problems, disabled_problems, schema_problems, signature_problems

if TYPE_CHECKING:
    from ..system import ToolSystem

__all__ = ["run_doctor"]


def run_doctor(system: ToolSystem, *, timeout: float = 30.0, verbose: bool = False) -> DoctorReport:
    """Check every plugin the system saw and the setup around them; each problem once, with its fix.

    ``timeout`` bounds each plugin's isolated import (they run in parallel subprocesses); ``verbose`` lists the
    tools hidden by design one by one instead of in one note.
    """
    from .. import __version__
    from ..plugins import source_label

    records = system.plugin_records()
    config_file = str(system.config.path) if system.config.path is not None else "the configuration file"
    with ThreadPoolExecutor(max_workers=max(1, min(8, len(records)))) as pool:
        probes = list(pool.map(lambda r: import_check(r, timeout), records))
    report = DoctorReport()
    for record, probe in zip(records, probes, strict=True):
        report.problems.extend(record_problems(record, probe, config_file))
        report.problems.extend(version_problems(record, __version__))
        report.plugins.append(
            {
                **record.as_dict(),
                "source": source_label(record.source, record.distribution),
                "import_check": asdict(probe),
            }
        )
    report.problems.extend(check_problems(system, verbose))
    for check in (
        hook_problems,
        schema_problems,
        signature_problems,
        toolset_problems,
        disabled_problems,
        mcp_problems,
        override_problems,
        sandbox_problems,
        environment_problems,
    ):
        report.problems.extend(check(system))
    report.problems = unique(report.problems)
    for row in report.plugins:
        row["problems"] = sum(1 for p in report.problems if p.plugin == row["name"] and p.severity != "info")
    return report
