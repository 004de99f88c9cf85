"""The environment API at its public surface: kinds from plugins (and their mistakes), a kind that cannot start
hides the tools that need it with the reason, ``RootedFiles`` on its own, and the environment's life with its
session."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hermes_core import ToolSystem, hookimpl
from hermes_core.environments import (
    EnvironmentSpec,
    EnvironmentStatus,
    LocalEnvironment,
    PathOutsideRoots,
    ReadOnlyPath,
    Root,
    RootedFiles,
    environment_for,
    environment_kinds,
)
from hermes_core.fileio import SymlinkError

MakeSystem = Callable[..., ToolSystem]


class Broken(LocalEnvironment):
    """A kind whose engine is missing here."""

    kind = "broken"

    @classmethod
    def probe(cls, spec: EnvironmentSpec) -> EnvironmentStatus:
        return EnvironmentStatus(
            kind="broken",
            ready=False,
            reason="the engine is not installed",
            fix="install it",
            files_ready=False,
        )


class KindsPlugin:
    """Registers one good kind and several mistakes."""

    @hookimpl
    def register_environments(self) -> dict[str, Any]:
        return {"broken": Broken, "local": Broken, "not-a-kind": object, "": Broken}


class FailingPlugin:
    @hookimpl
    def register_environments(self) -> dict[str, Any]:
        raise RuntimeError("cannot register")


def test_plugin_kinds_and_their_mistakes_are_recorded(make_system: MakeSystem) -> None:
    system = make_system(KindsPlugin(), FailingPlugin())
    kinds = environment_kinds(system)
    assert kinds.names() == ["broken", "local"]
    errors = "\n".join(kinds.errors)
    assert "'local' is built in and cannot be replaced" in errors
    assert "'not-a-kind' must be an Environment subclass" in errors
    assert "non-empty name" in errors
    assert "register_environments failed (RuntimeError: cannot register)" in errors


def test_a_kind_that_cannot_start_hides_the_tools_that_need_it(make_system: MakeSystem) -> None:
    system = make_system(KindsPlugin(), config={"environment": {"kind": "broken"}})
    hidden = system.hidden()
    for tool in ("terminal", "process", "execute_code", "read_file", "write_file", "patch", "search_files"):
        assert "the broken environment cannot start: the engine is not installed" in hidden[tool]
    assert system.call_outcome("terminal", {"command": "true"}).status != "ok"


@pytest.mark.parametrize("kind", ["container", "ssh", "nope"])
def test_a_kind_this_version_does_not_have_is_refused_clearly(make_system: MakeSystem, kind: str) -> None:
    system = make_system(config={"environment": {"kind": kind}})
    reason = system.hidden()["terminal"]
    if kind == "nope":
        assert "no environment kind 'nope'" in reason and "local" in reason
    else:
        assert f"the {kind!r} environment is not part of this version" in reason
    assert "read_file" in system.hidden()  # no environment: no files either


def test_the_local_kind_without_a_backend_keeps_the_file_tools(
    make_system: MakeSystem, monkeypatch: pytest.MonkeyPatch, workspace: Path
) -> None:
    from hermes_core.sandbox import _status

    def nothing(requested: str) -> Any:
        return _status.BackendChoice(requested, "", "no sandbox backend is usable here: test", None)

    monkeypatch.setattr(_status, "choose_backend", nothing)
    monkeypatch.setattr("hermes_core.sandbox.choose_backend", nothing)
    monkeypatch.setattr("hermes_core.sandbox._sandbox.choose_backend", nothing)
    system = make_system()
    hidden = system.hidden()
    assert "no sandbox backend is usable here" in hidden["terminal"]
    assert "read_file" not in hidden
    (workspace / "a.txt").write_text("still readable\n")
    assert "still readable" in system.call("read_file", {"path": "a.txt"})


def test_the_environment_ends_with_its_session(system: ToolSystem) -> None:
    system.call("terminal", {"command": "echo hi > /tmp/x"}, session_id="one")
    env = environment_for(_Owner(system, "one"))
    assert isinstance(env, LocalEnvironment) and env.tmp.exists()
    assert environment_for(_Owner(system, "one")) is env  # one per session
    assert environment_for(_Owner(system, "two")) is not env
    system.close_session("one")
    assert not env.tmp.exists()
    with pytest.raises(Exception, match="session has ended"):
        env.run("true")


class _Owner:
    def __init__(self, system: ToolSystem, session_id: str) -> None:
        self.host, self.workspace, self.session_id = system.host, system.workspace, session_id


# -- RootedFiles alone ------------------------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> tuple[RootedFiles, Path, Path]:
    # (no root at /tmp here: the host's tmp_path would be read as a path in it)
    host_ws, host_tmp, outside = tmp_path / "ws", tmp_path / "private-tmp", tmp_path / "outside"
    for folder in (host_ws / "sub", host_tmp, outside):
        folder.mkdir(parents=True)
    (outside / "secret").write_text("no")
    (host_ws / "sub" / "f.txt").write_text("hello")
    (host_ws / ".hidden").mkdir()
    (host_ws / ".hidden" / "key").write_text("key")
    (host_ws / "kept").mkdir()
    files = RootedFiles(
        [
            Root("/project", host_ws, True),
            Root("/scratch", host_tmp, True),
            Root("/usr", Path("/usr"), False),
        ],
        hidden=[host_ws / ".hidden"],
        read_only=[host_ws / "kept"],
        links={"/bin": "/usr/bin"},
    )
    return files, host_ws, outside


def test_rooted_files_map_every_path_to_a_root(tree: tuple[RootedFiles, Path, Path]) -> None:
    files, host_ws, outside = tree
    assert files.open_read("/project/sub/f.txt").read() == b"hello"
    (host_ws / "abs").symlink_to("/project/sub/f.txt")  # an absolute link as the environment sees paths
    (host_ws / "rel").symlink_to("sub/f.txt")
    (host_ws / "out").symlink_to(outside / "secret")  # a host path: outside every root
    (host_ws / "up").symlink_to("../../outside/secret")
    assert files.resolve("/project/abs") == "/project/sub/f.txt"
    assert files.resolve("/project/rel") == "/project/sub/f.txt"
    assert files.resolve("/bin/sh").startswith("/usr/bin/")
    assert files.resolve("/project/sub/../sub/new.txt") == "/project/sub/new.txt"  # a missing last part kept
    for escape in ("/project/out", "/project/up", str(outside / "secret"), "/project/../../outside/secret"):
        with pytest.raises(PathOutsideRoots):
            files.open_read(files.resolve(escape))
    with pytest.raises(SymlinkError):
        files.open_read("/project/rel")  # operations follow no link: resolve first
    with pytest.raises(PathOutsideRoots, match="hidden"):
        files.open_read("/project/.hidden/key")
    with pytest.raises(ReadOnlyPath):
        files.write("/usr/evil", b"x")
    with pytest.raises(ReadOnlyPath, match="kept read-only"):
        files.write("/project/kept/evil", b"x")
    assert files.write("/scratch/deep/new.txt", b"made") is False
    assert (host_ws.parent / "private-tmp" / "deep" / "new.txt").read_bytes() == b"made"
    assert files.env_path(host_ws / "sub" / "f.txt") == "/project/sub/f.txt"
    assert files.listdir("/project/sub") == ["f.txt"]
    files.remove("/scratch/deep/new.txt")
    assert files.stat("/project/sub").kind == "dir"
    files.close()


def test_rooted_files_without_openat2_walk_with_nofollow(
    tree: tuple[RootedFiles, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    files, host_ws, outside = tree
    files._strict = False  # the path taken on kernels without openat2 (or when a filter forbids it)
    (host_ws / "sub" / "link").symlink_to(outside)
    assert files.open_read("/project/sub/f.txt").read() == b"hello"
    with pytest.raises(SymlinkError):
        files.open_read("/project/sub/link/secret")
    with pytest.raises(PathOutsideRoots):
        files.open_read(files.resolve("/project/sub/link/secret"))
    assert files.write("/project/sub/made/x.txt", b"ok") is False
    assert (host_ws / "sub" / "made" / "x.txt").read_bytes() == b"ok"
    assert os.path.exists(host_ws / "sub" / "f.txt")


def test_a_handler_reaches_its_session_environment_from_the_context(system: ToolSystem) -> None:
    def where(*, context: Any) -> str:
        env = context.environment
        assert env is environment_for(context)
        return f"{env.kind} {env.workspace} {env.cwd} {env.session_id}"

    system.registry.register(
        name="where", toolset="t", handler=where, schema={"name": "where", "parameters": {"type": "object"}}
    )
    assert system.call("where", {}, session_id="s9") == (f"local {system.workspace} {system.workspace} s9")
