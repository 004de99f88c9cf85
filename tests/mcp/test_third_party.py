"""The client against real third-party MCP servers installed in the test environment.

- ``mcp-server-time`` and ``mcp-server-git`` from PyPI (the ``test`` extra installs them);
- ``@modelcontextprotocol/server-everything`` from npm, which ``.ci/run`` installs into ``.ci/node`` when node is
  present (or point ``HERMES_TEST_SERVER_EVERYTHING`` at its executable); its tests skip, saying so, without it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import eventually, free_port, load, wait_for_port

from hermes_core import ToolSystem
from hermes_core.content import content_blocks
from hermes_core.security import CallbackApprover

ROOT = Path(__file__).resolve().parents[2]


def _ready(system: ToolSystem, *names: str) -> None:
    assert system.wait_mcp(60)
    for name in names:
        assert eventually(lambda n=name: system.mcp_status()[n]["state"] == "ready", 30), system.mcp_status()[
            name
        ]


def _python_server(module: str) -> list[str]:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[test]' installs it)")
    return [sys.executable, "-m", module]


# -- mcp-server-time (PyPI) ----------------------------------------------------------------------------


def test_mcp_server_time() -> None:
    command, *args = _python_server("mcp_server_time")
    system = load({"time": {"command": command, "args": [*args, "--local-timezone", "UTC"]}})
    try:
        _ready(system, "time")
        assert set(system.mcp_status()["time"]["tools"]) == {"get_current_time", "convert_time"}
        assert system.registry["get_current_time"].parallel_safe  # the server says readOnlyHint
        now = json.loads(system.call("get_current_time", {"timezone": "Asia/Tokyo"}))
        assert now["timezone"] == "Asia/Tokyo" and now["datetime"].endswith("+09:00")
        converted = json.loads(
            system.call(
                "convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Europe/Paris"}
            )
        )
        assert converted["target"]["timezone"] == "Europe/Paris"
        assert converted["target"]["datetime"][11:16] in ("13:00", "14:00")  # CET or CEST
        bad = system.call_outcome("get_current_time", {"timezone": "Mars/Olympus"})
        assert bad.status == "error" and "Mars/Olympus" in bad.result
        missing = system.call_outcome("get_current_time", {})
        assert missing.error_kind == "invalid_arguments"  # checked against the server's schema, never sent
    finally:
        system.close()


# -- mcp-server-git (PyPI) -----------------------------------------------------------------------------


def _repo(path: Path, message: str) -> Path:
    path.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    for cmd in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", message]):
        subprocess.run(["git", *cmd], cwd=path, env=env, check=True, capture_output=True)
    (path / "staged.txt").write_text("new\n")
    subprocess.run(["git", "add", "staged.txt"], cwd=path, check=True, capture_output=True)
    return path


@pytest.fixture
def two_repos(tmp_path: Path) -> tuple[Path, Path]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    return _repo(tmp_path / "alpha", "first commit of alpha"), _repo(
        tmp_path / "beta", "first commit of beta"
    )


def test_two_git_servers_on_two_repositories_never_mix_up_their_roots(two_repos: tuple[Path, Path]) -> None:
    """The issue's report: two servers with the same tool names replaced each other at random, and a write tool
    landed on the wrong repository. Each tool name now reaches its own server, whatever connects first."""
    alpha, beta = two_repos
    command, *args = _python_server("mcp_server_git")
    asked: list[Any] = []

    def approve(request: Any) -> str:
        asked.append(request)
        return "once"

    system = load(
        {
            "alpha": {"command": command, "args": [*args, "--repository", str(alpha)]},
            "beta": {"command": command, "args": [*args, "--repository", str(beta)]},
        },
        approver=CallbackApprover(approve),
    )
    try:
        _ready(system, "alpha", "beta")
        assert eventually(lambda: "alpha_git_log" in system.registry and "beta_git_log" in system.registry)
        assert "git_log" not in system.registry
        assert "first commit of alpha" in system.call("alpha_git_log", {"repo_path": str(alpha)})
        assert "first commit of beta" in system.call("beta_git_log", {"repo_path": str(beta)})
        # git_reset is annotated destructive: it asks first, and unstages in beta only
        assert system.registry["beta_git_reset"].annotations["destructiveHint"] is True
        system.call("beta_git_reset", {"repo_path": str(beta)})
        assert [r.subject for r in asked] == [f'mcp:beta git_reset {{"repo_path": "{beta}"}}']
        assert "staged.txt" not in system.call("beta_git_diff_staged", {"repo_path": str(beta)})
        assert "staged.txt" in system.call("alpha_git_diff_staged", {"repo_path": str(alpha)})
        clash = next(c for c in system.mcp_status()["alpha"]["clashes"] if c["tool"] == "git_log")
        assert clash["with"] == ["MCP server 'beta'"]
    finally:
        system.close()


def test_a_destructive_git_tool_is_denied_without_anyone_to_approve(two_repos: tuple[Path, Path]) -> None:
    alpha, _ = two_repos
    command, *args = _python_server("mcp_server_git")
    system = load({"git": {"command": command, "args": [*args, "--repository", str(alpha)]}})
    try:
        _ready(system, "git")
        outcome = system.call_outcome("git_reset", {"repo_path": str(alpha)})
        assert (outcome.status, outcome.error_kind) == ("denied", "approval")
        assert "staged.txt" in system.call("git_diff_staged", {"repo_path": str(alpha)})  # nothing was reset
    finally:
        system.close()


# -- @modelcontextprotocol/server-everything (npm) -----------------------------------------------------


def _everything() -> str:
    candidates = [
        os.environ.get("HERMES_TEST_SERVER_EVERYTHING"),
        str(ROOT / ".ci" / "node" / "node_modules" / ".bin" / "mcp-server-everything"),
        shutil.which("mcp-server-everything"),
    ]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and shutil.which("node"):
            return candidate
    pytest.skip(
        "@modelcontextprotocol/server-everything is not installed: .ci/run installs it with npm into .ci/node "
        "when node is present (or set HERMES_TEST_SERVER_EVERYTHING)"
    )


@pytest.fixture(scope="module")
def everything(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ToolSystem]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HERMES_HOME", str(tmp_path_factory.mktemp("everything-home")))
        system = load({"everything": {"command": _everything(), "timeout": 2}})
        try:
            _ready(system, "everything")
            yield system
        finally:
            system.close()


def test_everything_tools_calls_and_errors(everything: ToolSystem) -> None:
    assert everything.call("echo", {"message": "hi"}) == "Echo: hi"
    assert everything.call("get-sum", {"a": 2, "b": 40}) == "The sum of 2 and 40 is 42."
    assert everything.call_outcome("get-sum", {"a": "two", "b": 1}).error_kind == "invalid_arguments"
    assert json.loads(everything.call("get-structured-content", {"location": "New York"}))["conditions"]


def test_everything_images_reach_the_host_and_text_blobs_are_decoded(everything: ToolSystem) -> None:
    outcome = everything.call_outcome("get-tiny-image")
    [image] = outcome.attachments
    assert image.mime_type == "image/png" and image.data.startswith(b"\x89PNG\r\n\x1a\n")
    assert content_blocks(outcome, "anthropic")[1]["source"]["media_type"] == "image/png"
    blob = everything.call("get-resource-reference", {"resourceType": "Blob", "resourceId": 2})
    assert "This is a base64 blob" in blob  # a text/plain blob, decoded
    text = everything.call("get-resource-reference", {"resourceType": "Text", "resourceId": 1})
    assert "This is a plaintext resource" in text


def test_everything_task_only_tool_is_hidden_with_the_reason(everything: ToolSystem) -> None:
    assert "simulate-research-query" not in {d["function"]["name"] for d in everything.definitions()}
    assert "taskSupport: required" in everything.hidden()["simulate-research-query"]


def test_everything_progress_extends_the_timeout(everything: ToolSystem) -> None:
    started = time.monotonic()
    # 3 s of work against a 2 s timeout: a progress notification every 0.5 s keeps the call alive
    result = everything.call("trigger-long-running-operation", {"duration": 3, "steps": 6})
    assert result == "Long running operation completed. Duration: 3 seconds, Steps: 6."
    assert time.monotonic() - started >= 3


def test_everything_over_streamable_http() -> None:
    command = _everything()
    port = free_port()
    proc = subprocess.Popen(
        [command, "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc)
        system = load({"web": {"url": f"http://127.0.0.1:{port}/mcp"}})
        try:
            _ready(system, "web")
            assert system.mcp_status()["web"]["server"] == "mcp-servers/everything"
            assert system.call("echo", {"message": "over http"}) == "Echo: over http"
            assert system.call_outcome("get-tiny-image").attachments[0].mime_type == "image/png"
        finally:
            system.close()
    finally:
        proc.terminate()
        proc.wait(10)
