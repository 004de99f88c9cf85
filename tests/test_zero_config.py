"""Zero configuration, proven in a fresh virtual environment.

A module-scoped fixture creates a real venv (no system site-packages), ``pip install``s hermes-tools
(not editable) and then each example plugin. Every test runs that venv's ``hermes`` command as a real
subprocess with an empty ``HERMES_HOME``: no config file, no ``HERMES_*`` plugin variables. The tools and
hooks of the plugins show up and work, ``hermes plugins doctor`` is clean, and uninstalling a plugin
removes its tools.

The sources are copied to a temporary directory before building, so setuptools never writes ``build/``
or ``*.egg-info`` into the working tree.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

# the first test's setup builds the venv: minutes on a cold pip cache, beyond the suite's 120 s default
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "example_plugins"
# entry-point name -> (distribution, hooks it implements, tools it registers)
PLUGINS: dict[str, tuple[str, list[str], list[str]]] = {
    "weather": ("hermes-weather", ["register_tools"], ["get_weather"]),
    "ratelimit": ("hermes-ratelimit", ["plugin_config_schema", "pre_tool_call"], []),
    "audit": ("hermes-audit", ["post_tool_call", "register_commands"], []),
}
_NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv", ".nox", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis"
)
_SCRUBBED = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")


def _clean_environ() -> dict[str, str]:
    """This process's environment without any ``HERMES_*`` setting or anything that leaks other packages."""
    return {k: v for k, v in os.environ.items() if not k.startswith("HERMES_") and k not in _SCRUBBED}


def _version(distribution: str) -> str:
    data = tomllib.loads((EXAMPLES / distribution / "pyproject.toml").read_text("utf-8"))
    return str(data["project"]["version"])


@dataclass
class FreshEnv:
    """The fresh venv, the copied sources, and what ``hermes`` said before any plugin was installed."""

    venv: Path
    sources: Path
    before_tools: list[dict[str, Any]]
    before_plugins: list[dict[str, Any]]

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    def pip(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run the venv's pip quietly; fail the test with pip's output if it fails."""
        env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
        done = subprocess.run(
            [str(self.bin / "python"), "-m", "pip", "--disable-pip-version-check", *args],
            capture_output=True,
            text=True,
            timeout=900,
            env=env,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, f"pip {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
        return done

    def install_plugin(self, distribution: str, *options: str) -> None:
        self.pip("install", "--quiet", *options, str(self.sources / "example_plugins" / distribution))


def _run(
    venv_bin: Path, home: Path, cwd: Path, args: tuple[str, ...], extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        **_clean_environ(),
        "HERMES_HOME": str(home),
        "PATH": f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}",
        **(extra or {}),
    }
    return subprocess.run(
        [str(venv_bin / "hermes"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


def _json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, f"{done.args} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def fresh_env(tmp_path_factory: pytest.TempPathFactory) -> FreshEnv:
    root = tmp_path_factory.mktemp("zero-config")
    sources = root / "src"
    shutil.copytree(ROOT, sources, ignore=_NOT_SOURCES, symlinks=True)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    env = FreshEnv(venv=venv, sources=sources, before_tools=[], before_plugins=[])
    env.pip("install", "--quiet", str(sources))
    home, work = root / "home-before", root / "work-before"
    home.mkdir()
    work.mkdir()
    env.before_tools = _json(_run(env.bin, home, work, ("tools", "list", "--all", "--json")))
    env.before_plugins = _json(_run(env.bin, home, work, ("plugins", "list", "--all", "--json")))
    for distribution, _, _ in PLUGINS.values():
        env.install_plugin(distribution)
    return env


@dataclass
class Hermes:
    """The fresh venv's ``hermes`` command with this test's empty HERMES_HOME and workspace."""

    env: FreshEnv
    home: Path
    workspace: Path

    def __call__(self, *args: str, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return _run(self.env.bin, self.home, self.workspace, args, extra)

    def json(self, *args: str, extra: dict[str, str] | None = None) -> Any:
        return _json(self(*args, "--json", extra=extra))


@pytest.fixture
def hermes(fresh_env: FreshEnv, tmp_path: Path) -> Iterator[Hermes]:
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    home.mkdir()
    workspace.mkdir()
    yield Hermes(fresh_env, home, workspace)
    assert not (home / "config.toml").exists(), "a config file was written"


def _by_name(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in rows}


def test_the_venv_is_fresh_and_hermes_tools_is_not_editable(fresh_env: FreshEnv) -> None:
    cfg = (fresh_env.venv / "pyvenv.cfg").read_text("utf-8")
    assert re.search(r"^include-system-site-packages\s*=\s*false$", cfg, re.MULTILINE)
    where = subprocess.run(
        [str(fresh_env.bin / "python"), "-c", "import hermes_core, hermes_builtin as b; print(b.__file__)"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=fresh_env.venv,
        env=_clean_environ(),
    )
    assert where.returncode == 0, where.stderr
    installed = Path(where.stdout.strip()).resolve()
    assert installed.is_relative_to(fresh_env.venv.resolve()) and "site-packages" in installed.parts
    assert not installed.is_relative_to(ROOT)


def test_before_any_plugin_only_the_builtins_are_there(fresh_env: FreshEnv) -> None:
    assert [p["name"] for p in fresh_env.before_plugins] == ["builtin"]
    assert fresh_env.before_tools, "no built-in tools were listed"
    assert {(t["plugin"], t["distribution"], t["source"]) for t in fresh_env.before_tools} == {
        ("builtin", "hermes-tools", "built-in")
    }
    assert "get_weather" not in _by_name(fresh_env.before_tools)


def test_each_plugin_is_loaded_with_its_hooks_and_tools(fresh_env: FreshEnv, hermes: Hermes) -> None:
    plugins = _by_name(hermes.json("plugins", "list"))
    assert set(plugins) == {"builtin", *PLUGINS}
    for name, (distribution, hooks, registered) in PLUGINS.items():
        row = plugins[name]
        assert (row["status"], row["source"], row["error"]) == ("loaded", "entry point", None), row
        assert (row["distribution"], row["version"]) == (distribution, _version(distribution))
        assert sorted(row["hooks"]) == hooks
        assert row["tools"] == registered
    tools = _by_name(hermes.json("tools", "list"))
    assert set(tools) == set(_by_name(fresh_env.before_tools)) | {"get_weather"}
    weather = tools["get_weather"]
    assert (weather["plugin"], weather["toolset"], weather["distribution"]) == (
        "weather",
        "weather",
        "hermes-weather",
    )
    # selected by the default configuration and its check passes with the default settings
    assert (weather["selected"], weather["available"], weather["reason"]) == (True, True, "")


def test_the_audit_hook_records_every_call_and_the_chain_verifies(hermes: Hermes) -> None:
    (hermes.workspace / "notes.txt").write_text("zero config\n", "utf-8")
    done = hermes("call", "read_file", '{"path": "notes.txt"}')
    assert done.returncode == 0, done.stderr
    assert "zero config" in done.stdout
    trail = hermes.home / "data" / "audit" / "audit.jsonl"
    records = [json.loads(line) for line in trail.read_text("utf-8").splitlines()]
    assert [(r["tool"], r["status"]) for r in records] == [("read_file", "ok")]
    report = hermes.json("audit", "verify")
    assert (report["ok"], report["records"], report["path"]) == (True, 1, str(trail))
    assert hermes("audit", "verify").returncode == 0
    # the verification is real: an edited record breaks the chain
    trail.write_text(trail.read_text("utf-8").replace('"read_file"', '"write_file"'), "utf-8")
    tampered = hermes("audit", "verify")
    assert tampered.returncode == 1
    assert "TAMPERED" in tampered.stdout


def test_the_ratelimit_hook_runs_on_every_call_and_allows_everything(hermes: Hermes) -> None:
    (hermes.workspace / "notes.txt").write_text("limits\n", "utf-8")
    for _ in range(3):
        done = hermes("call", "read_file", "path=notes.txt", extra={"HERMES_TRACE_PLUGINS": "1"})
        assert done.returncode == 0, done.stderr
        assert "limits" in done.stdout
        traced = [
            line for line in done.stderr.splitlines() if re.search(r"\bpre_tool_call ratelimit\b", line)
        ]
        assert len(traced) == 1, done.stderr
        assert traced[0].endswith("-> None")  # no Block: the call went ahead


def test_weather_answers_from_a_local_server_set_by_environment(
    hermes: Hermes, httpserver: HTTPServer
) -> None:
    place = {"name": "Oslo", "latitude": 59.91, "longitude": 10.75, "country": "Norway", "admin1": "Oslo"}
    httpserver.expect_oneshot_request("/v1/search", method="GET").respond_with_json({"results": [place]})
    current = {
        "time": "2025-01-10T09:00",
        "temperature_2m": -4.0,
        "apparent_temperature": -9.0,
        "relative_humidity_2m": 80,
        "precipitation": 0.2,
        "weather_code": 71,
        "wind_speed_10m": 14.0,
    }
    httpserver.expect_oneshot_request("/v1/forecast", method="GET").respond_with_json(
        {"timezone": "Europe/Oslo", "current": current}
    )
    extra = {
        "HERMES_WEATHER_BASE_URL": httpserver.url_for("/").rstrip("/"),
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    done = hermes("call", "get_weather", '{"location": "Oslo"}', extra=extra)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["location"]["name"] == "Oslo" and report["location"]["timezone"] == "Europe/Oslo"
    assert (report["temperature"], report["temperature_unit"]) == (-4.0, "°C")
    httpserver.check_assertions()
    (search, _), (forecast, _) = httpserver.log
    assert search.args["name"] == "Oslo"
    assert (forecast.args["latitude"], forecast.args["longitude"]) == ("59.91", "10.75")


def test_plugins_doctor_is_clean(hermes: Hermes) -> None:
    done = hermes("plugins", "doctor", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is True
    assert [p for p in report["problems"] if p["severity"] == "error"] == []
    assert [p for p in report["problems"] if p["plugin"] in PLUGINS] == []
    checked = _by_name(report["plugins"])
    for name in PLUGINS:
        assert checked[name]["status"] == "loaded" and checked[name]["problems"] == 0
        assert checked[name]["import_check"]["ok"] is True


def test_uninstalling_a_plugin_removes_its_tools(fresh_env: FreshEnv, hermes: Hermes) -> None:
    # the same HERMES_HOME throughout: its entry-point cache, warm with the plugin, must notice the uninstall
    assert "get_weather" in _by_name(hermes.json("tools", "list", "--all"))
    cached = [p.read_text("utf-8") for p in (hermes.home / "cache").glob("*.json")]
    assert any("hermes_weather" in text for text in cached), "no warm entry-point cache to invalidate"
    fresh_env.pip("uninstall", "--yes", "--quiet", "hermes-weather")
    try:
        assert "get_weather" not in _by_name(hermes.json("tools", "list", "--all"))
        assert "weather" not in _by_name(hermes.json("plugins", "list", "--all"))
        assert hermes("call", "get_weather", "location=Oslo").returncode != 0
    finally:
        fresh_env.install_plugin("hermes-weather", "--no-deps")
    assert "get_weather" in _by_name(hermes.json("tools", "list", "--all"))
