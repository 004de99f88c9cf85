"""What ``hermes sandbox status`` and the plugin doctor say about the sandbox: which backend, why, and what to fix."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..config import Config, ConfigError
from ._landlock import probe_landlock
from ._layout import SandboxRefused, is_within
from ._sandbox import Sandbox
from ._settings import settings_from_config
from ._status import report

__all__ = ["Diagnosis", "diagnose", "status"]

_INSTALL = "install bubblewrap (Debian/Ubuntu: apt install bubblewrap)"


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """One finding about the sandbox: ``severity`` is error, warning or info, with a one-line ``fix``."""

    severity: str
    message: str
    fix: str


def _sandbox(config: Config, workspace: Path) -> Sandbox:
    from .. import paths

    hidden: list[Path] = [paths.data_dir(), paths.cache_dir()]
    if config.path is not None:
        hidden.append(config.path)
    return Sandbox(settings_from_config(config), workspace=workspace, hidden=hidden)


def diagnose(config: Config, workspace: Path) -> list[Diagnosis]:
    """Findings about the sandbox the configuration gives commands run in ``workspace``."""
    try:
        box = _sandbox(config, workspace)
    except ConfigError as err:
        return [
            Diagnosis("error", f"the [sandbox] configuration is invalid: {err}", "fix the [sandbox] table")
        ]
    choice = box.choice
    out: list[Diagnosis] = []
    if choice.backend is None:
        out.append(
            Diagnosis(
                "error",
                f"terminal, execute_code and command cron jobs refuse to run: {choice.reason}",
                f'{_INSTALL}, or set [sandbox] backend = "none" to run commands without walls',
            )
        )
        return out
    if choice.name == "none":
        out.append(
            Diagnosis(
                "warning",
                'commands run WITHOUT a sandbox ([sandbox] backend = "none"): terminal, execute_code and cron '
                "jobs can read, write and signal whatever this user can; only the command guard stands in the way",
                f'set [sandbox] backend = "auto" ({_INSTALL} for the strongest walls)',
            )
        )
    elif choice.name == "landlock":
        abi = probe_landlock()[0]
        marker = "NOT STOPPED: "
        not_stopped = [
            line.removeprefix(marker) for line in report("landlock")["limitations"] if line.startswith(marker)
        ]
        out.append(
            Diagnosis(
                "warning",
                f"commands run in the Landlock sandbox ({choice.reason}, ABI {abi}), which does NOT stop: "
                + "; ".join(not_stopped),
                f"{_INSTALL} for the full walls",
            )
        )
    else:
        out.append(
            Diagnosis("info", f"commands run in the {choice.name} sandbox ({choice.reason})", "nothing to do")
        )
    if choice.name != "none":
        from ._seccomp import seccomp_status

        ok, why = seccomp_status()
        if not ok:
            out.append(
                Diagnosis(
                    "error",
                    f"commands are refused: {why}",
                    "install libseccomp2 (Debian/Ubuntu: apt install libseccomp2)",
                )
            )
    try:
        layout = box.layout()
    except SandboxRefused as err:
        out.append(
            Diagnosis(
                "error", f"commands in {workspace} are refused: {err.message}", "choose another workspace"
            )
        )
        return out
    if choice.name != "none" and is_within(layout.home, layout.workspace):
        out.append(
            Diagnosis(
                "warning",
                f"the workspace {layout.workspace} contains your home folder: its credential files are hidden"
                + (" but Landlock refuses such a workspace" if choice.name == "landlock" else "")
                + ", everything else there is visible and writable",
                "run hermes from a project folder (or pass --workspace)",
            )
        )
    for note in layout.notes:
        out.append(Diagnosis("info", note, "add it to [sandbox] read_only if commands need it"))
    return out


def status(config: Config, workspace: Path) -> dict[str, Any]:
    """Everything ``hermes sandbox status`` shows: backends, the choice and why, limits, the view, findings."""
    try:
        settings = settings_from_config(config)
    except ConfigError as err:
        return {"error": str(err), "findings": [asdict(d) for d in diagnose(config, workspace)]}
    data = report(settings.backend)
    from ._netns import netns_support

    made, why = netns_support() if data["backend"] in ("bwrap", "landlock") else (False, "no sandbox")
    data["network"] = {
        "default": settings.network,
        "tools": dict(settings.tool_network),
        "allow": list(settings.egress.names()),
        "ask_for_others": settings.egress.ask,
        "namespace": "available" if made else why,
        "unix_sockets": settings.unix_sockets,
    }
    data["host_run"] = list(settings.host_run)
    data["call_limits"] = {k: v for k, v in asdict(settings.limits).items() if v is not None}
    data["environment"] = {"pass_env": list(settings.pass_env), "set": sorted(settings.env)}
    try:
        layout = _sandbox(config, workspace).layout()
    except SandboxRefused as err:
        data["view"] = {"refused": err.message}
    else:
        data["view"] = {
            "workspace": str(layout.workspace),
            "read_write": [str(p) for p in layout.read_write],
            "read_only": [str(p) for p, target in layout.system if target is None]
            + [str(p) for p in layout.read_only],
            "kept_read_only_inside_workspace": [str(p) for p in layout.protected],
            "hidden": [
                str(p) for p in [*layout.hidden, *layout.etc_hidden] if p.exists() or p in layout.hermes
            ],
            "hermes_folders": [str(p) for p in layout.hermes],
        }
    data["findings"] = [asdict(d) for d in diagnose(config, workspace)]
    return data
