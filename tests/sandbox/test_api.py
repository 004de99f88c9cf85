"""The public sandbox API (``hermes_core.sandbox``) as a plugin author meets it: a tool that runs a command
through ``sandbox_for(context)``, per-call limits for the whole tree, and walls for awkward workspaces."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sandbox_stage import gone, sleep_marker

from hermes_core import CallContext, ToolSystem, hookimpl
from hermes_core.sandbox import Limits, Sandbox, SandboxRefused, SandboxSettings, choose_backend, sandbox_for
from hermes_core.sandbox._cgroup import cgroup_support

ALL_BACKENDS = ("bwrap", "landlock", "none")


def _usable(name: str) -> None:
    choice = choose_backend(name)
    if choice.backend is None:
        pytest.skip(f"the {name} backend is not usable on this machine: {choice.reason}")


@pytest.fixture(params=ALL_BACKENDS)
def any_backend(request: pytest.FixtureRequest) -> str:
    _usable(request.param)
    return str(request.param)


class _LineCount:
    """A plugin whose tool counts lines with ``wc`` in the sandbox, as any third-party tool may."""

    @hookimpl
    def register_tools(self, registry: Any) -> None:
        def count_lines(path: str, *, context: CallContext) -> str:
            result = sandbox_for(context).run(["wc", "-l", path], timeout=10, tool="count_lines")
            return f"{result.output.strip()} (exit {result.exit_code}, {result.backend})"

        registry.register(
            name="count_lines",
            toolset="lines",
            schema={
                "name": "count_lines",
                "description": "Count the lines of a file.",
                "parameters": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                },
            },
            handler=count_lines,
        )


def test_a_plugin_tool_runs_its_command_behind_the_same_walls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("a\nb\nc\n")
    monkeypatch.setenv("HOME", str(home))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("one\ntwo\n")
    with ToolSystem.load(
        load_entry_points=False,
        plugins_dir=False,
        plugins=[_LineCount()],
        workspace=workspace,
        config={"sandbox": {"backend": backend}},
    ) as system:
        assert system.call("count_lines", {"path": "notes.txt"}) == f"2 notes.txt (exit 0, {backend})"
        blocked = system.call("count_lines", {"path": str(home / ".ssh" / "id_rsa")})
        assert "3 " not in blocked and "exit 1" in blocked
        assert sandbox_for(system) is sandbox_for(system)  # one per system, closed with it


def test_limits_apply_to_the_whole_tree(tmp_path: Path, any_backend: str) -> None:
    box = Sandbox(SandboxSettings(backend=any_backend), workspace=tmp_path)
    try:
        hog = box.run(
            [sys.executable, "-c", "x = []\nwhile True: x.append(bytearray(8 << 20))"],
            limits=Limits(memory_mb=150),
            timeout=30,
        )
        assert "MemoryError" in hog.output and hog.exit_code == 1
        spin = box.run([sys.executable, "-c", "while True: pass"], limits=Limits(cpu_seconds=1), timeout=30)
        assert not spin.timed_out and (spin.limit == "cpu" or spin.exit_code in (-24, 128 + 24)), spin
        big = box.run(
            ["bash", "-c", "head -c 3000000 /dev/zero > big.bin; echo $?"], limits=Limits(max_file_mb=1)
        )
        assert "File size limit exceeded" in big.output and (tmp_path / "big.bin").stat().st_size <= 1 << 20
        forks = box.run(
            ["bash", "-c", f"for i in $(seq 40); do sleep {sleep_marker()} & done; wait"],
            limits=Limits(max_processes=10),
            timeout=30,
        )
        assert forks.limit == "processes" and forks.exit_code is None and forks.duration < 20
        flood = box.run(
            ["bash", "-c", "echo FIRST; seq 1 200000; echo LAST"], limits=Limits(max_output_bytes=2000)
        )
        assert (
            flood.output.startswith("FIRST") and flood.output.rstrip().endswith("LAST") and flood.omitted > 0
        )
    finally:
        box.close()


def test_no_cgroup_is_left_behind(tmp_path: Path, backend: str) -> None:
    version, folders, _ = cgroup_support()
    if not version:
        pytest.skip("no writable cgroup here: limits use rlimits only")
    box = Sandbox(SandboxSettings(backend=backend), workspace=tmp_path)
    for _ in range(3):
        box.run(["true"], limits=Limits(max_processes=50, memory_mb=256))
    box.close()
    deadline = time.monotonic() + 8  # folders whose last process was still exiting go a moment later
    while time.monotonic() < deadline:
        mine = [p for folder in folders.values() for p in folder.glob(f"hermes-{os.getpid()}-*")]
        if not mine:
            break
        time.sleep(0.05)
    assert mine == []


def test_closing_the_sandbox_ends_what_it_started(tmp_path: Path, any_backend: str) -> None:
    box = Sandbox(SandboxSettings(backend=any_backend), workspace=tmp_path)
    marker = sleep_marker()
    proc = box.start(["bash", "-c", f"setsid sleep {marker} & sleep {sleep_marker()}"], background=True)
    assert proc.running
    box.close()
    assert gone(marker) and not proc.running
    with pytest.raises(SandboxRefused, match="closed"):
        box.run(["true"])


def test_a_workspace_inside_home_hides_the_rest_of_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    home = tmp_path / "home"
    project = home / "src" / "project"
    project.mkdir(parents=True)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("KEY-IN-HOME\n")
    (home / "diary.txt").write_text("DIARY\n")
    monkeypatch.setenv("HOME", str(home))
    box = Sandbox(SandboxSettings(backend=backend), workspace=project)
    try:
        out = box.run(
            [
                "bash",
                "-c",
                f"cat {home}/.ssh/id_rsa {home}/diary.txt; cd ~/src/project 2>/dev/null; pwd; touch made",
            ]
        ).output
        assert "KEY-IN-HOME" not in out and "DIARY" not in out
        assert (project / "made").exists()
    finally:
        box.close()


def test_a_workspace_that_is_home_keeps_its_secrets_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("KEY-IN-HOME\n")
    (home / ".netrc").write_text("NETRC-IN-HOME\n")
    (home / "notes.txt").write_text("ordinary\n")
    monkeypatch.setenv("HOME", str(home))
    box = Sandbox(SandboxSettings(backend=backend), workspace=home)
    try:
        if backend == "landlock":  # it cannot hide part of a tree: refused, never run unwalled
            with pytest.raises(SandboxRefused, match="Landlock cannot hide"):
                box.run(["cat", "notes.txt"])
            return
        out = box.run(["bash", "-c", "cat notes.txt .ssh/id_rsa .netrc; echo x > .netrc; rm -rf .ssh"]).output
        assert "ordinary" in out and "KEY-IN-HOME" not in out and "NETRC-IN-HOME" not in out
        assert (home / ".netrc").read_text() == "NETRC-IN-HOME\n"
        assert (home / ".ssh" / "id_rsa").exists()
    finally:
        box.close()


def test_the_hosts_interpreter_stays_read_only_inside_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _usable("bwrap")
    venv = tmp_path / "ws" / ".venv"
    (venv / "lib").mkdir(parents=True)
    monkeypatch.setattr("hermes_core.sandbox._layout.interpreter_prefixes", lambda: [venv])
    box = Sandbox(SandboxSettings(backend="bwrap"), workspace=tmp_path / "ws")
    try:
        out = box.run(
            ["bash", "-c", "echo 'import os' > .venv/lib/evil.pth; echo x > mine.txt; echo done"]
        ).output
        assert "Read-only file system" in out and "done" in out
        assert not (venv / "lib" / "evil.pth").exists() and (tmp_path / "ws" / "mine.txt").exists()
    finally:
        box.close()


def test_the_workspace_cannot_be_the_root(any_backend: str) -> None:
    box = Sandbox(SandboxSettings(backend=any_backend), workspace="/")
    with pytest.raises(SandboxRefused, match="no walls"):
        box.layout()


def test_network_modes_per_tool_and_the_network_table() -> None:
    from hermes_core.config import Config, ConfigError
    from hermes_core.sandbox import DEFAULT_REGISTRIES, settings_from_config

    settings = settings_from_config(Config({"sandbox": {"tools": {"fetcher": {"network": "off"}}}}))
    assert settings.network_for("terminal") == "on" and settings.network_for("fetcher") == "off"
    table = {"mode": "host", "allow": ["example.org", "*.example.com"], "registries": False}
    settings = settings_from_config(Config({"sandbox": {"network": table}}))
    assert settings.network == "host" and settings.egress.names() == ("example.org", "*.example.com")
    assert settings_from_config(Config({})).egress.names() == DEFAULT_REGISTRIES
    for bad in (
        {"network": "maybe"},
        {"network": {"allow": ["http://x/"]}},
        {"network": {"allow_networks": ["x"]}},
    ):
        with pytest.raises(ConfigError):
            settings_from_config(Config({"sandbox": bad}))


def test_one_off_views_leave_no_private_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _usable("landlock")
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    extra = tmp_path / "bridge"
    extra.mkdir()
    (extra / "data.txt").write_text("shown\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    box = Sandbox(SandboxSettings(backend="landlock"), workspace=ws)
    try:
        for _ in range(3):
            assert box.run(["cat", str(extra / "data.txt")], read_only=[extra]).output == "shown\n"
        assert list(scratch.iterdir()) == []  # per-call views: their ruleset and folders went with the call
        box.run(["true"])
        box.run(["true"])
        assert len(list(scratch.iterdir())) == 1  # the shared view: one private folder, reused
    finally:
        box.close()
    assert list(scratch.iterdir()) == []


def test_the_plugin_testing_fixture_workspace_inside_hermes_home_works(
    make_tool_system: Any, hermes_home: Path, backend: str
) -> None:
    (hermes_home / "config.toml").write_text("# hermes-config-marker\n")
    system = make_tool_system(_LineCount(), config={"sandbox": {"backend": backend}})
    workspace = hermes_home / "workspace"
    (workspace / "notes.txt").write_text("one\n")
    assert system.call("count_lines", {"path": "notes.txt"}) == f"1 notes.txt (exit 0, {backend})"
    out = sandbox_for(system).run(
        [
            "bash",
            "-c",
            f"cat {hermes_home}/config.toml; mkdir -p {hermes_home}/plugins && touch {hermes_home}/plugins/x.py",
        ]
    )
    assert "hermes-config-marker" not in out.output
    assert not (hermes_home / "plugins" / "x.py").exists()
