"""The plugin doctor: every plugin and the setup around it checked, each problem once with a one-line fix.

``run_doctor(system)`` returns a ``DoctorReport`` (``ok``, ``plugins``, ``problems``); ``hermes plugins doctor``
renders it. Checks: an isolated import of each plugin in a subprocess (error and time), hook implementations
against the hook specs, every tool schema against its metaschema and each provider's rules, each handler's
signature against its schema, tool name clashes, tool checks (missing environment variables, binaries...),
blocked and disabled plugins, toolsets and overrides in the configuration, MCP servers, the sandbox, and the
``hermes-tools`` version range a distribution declares.
"""

from ._imports import ImportCheck, import_check
from ._report import DoctorReport, Problem
from ._run import run_doctor

__all__ = ["DoctorReport", "ImportCheck", "Problem", "import_check", "run_doctor"]
