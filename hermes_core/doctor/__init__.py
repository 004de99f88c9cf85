"""The plugin doctor: every plugin and the setup around it checked, each problem once with a one-line fix.

``run_doctor(system)`` returns a ``DoctorReport`` (``ok``, ``plugins``, ``problems``); ``hermes plugins doctor``
renders it. Checks: an isolated import of each plugin in a subprocess (error and time), hook implementations
against the hook specs (and functions named after a hook without ``@hookimpl``), a failed plugin's lost policy
hooks and what ``[plugins] on_failure`` makes of them, tools a plugin lost to a name clash, every tool schema
against its metaschema and each provider's rules, each handler's signature against its schema, tool checks
(missing environment variables, binaries...; the tools hidden by design in one note unless ``verbose``), the
``[plugins.<section>]`` tables against the schemas plugins declare, blocked and disabled plugins, toolsets and
overrides in the configuration, MCP servers, the sandbox and the session environment, and the ``hermes-tools``
version range a distribution declares.
"""

from ._imports import ImportCheck, import_check
from ._report import DoctorReport, Problem
from ._run import run_doctor

__all__ = ["DoctorReport", "ImportCheck", "Problem", "import_check", "run_doctor"]
