"""``PathJudge`` (the bulk path guard of listings and searches) gives ``check_path``'s verdicts, path for path.

A real tree under a fake home: the workspace with ordinary files, an ``.env``, git hooks and config, symbolic
links to keys, to credential folders, to folders inside and outside the workspace, a dangling link and a loop;
hermes's own state inside and outside the workspace. Hypothesis writes paths from those names (relative, with
``.``, ``..`` and ``//``, absolute, under ``~``), and every verdict of the judge must equal ``check_path``'s:
decision, reason, resolved path and whether it is inside the workspace.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_core.security import PathJudge, check_path

PARTS = [
    ".", "..", "", "src", "a.py", "x.txt", ".env", ".env.local", ".git", "hooks", "pre-commit", "config",
    "to_key", "to_aws", "to_src", "to_outside", "dangling", "loop", "missing", "hermes", "data", "cache",
    "plugins", "config.toml", ".ssh", "id_rsa", ".aws", "credentials", ".bashrc", ".npmrc", "etc", "passwd",
    "shadow", "tmp", "nested",
]  # fmt: skip


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Path]]:
    base = tmp_path_factory.mktemp("judge")
    home, ws, outside = base / "home", base / "ws", base / "outside"
    for folder in (home / ".ssh", home / ".aws", ws / "src" / "nested", ws / ".git" / "hooks", outside):
        folder.mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("key\n")
    (home / ".aws" / "credentials").write_text("[default]\n")
    (home / ".bashrc").write_text("# rc\n")
    (home / ".npmrc").write_text("//registry.npmjs.org/:_authToken=abc\n")
    for rel in (
        "src/a.py",
        "src/nested/x.txt",
        ".env",
        "src/.env.local",
        ".git/config",
        ".git/hooks/pre-commit",
    ):
        (ws / rel).write_text("x\n")
    (outside / "x.txt").write_text("x\n")
    (ws / "to_key").symlink_to(home / ".ssh" / "id_rsa")
    (ws / "src" / "to_aws").symlink_to(home / ".aws")
    (ws / "to_src").symlink_to(ws / "src")
    (ws / "to_outside").symlink_to(outside)
    (ws / "dangling").symlink_to(ws / "missing" / "nowhere")
    (ws / "loop").symlink_to(ws / "loop")
    hermes = (
        ws / "hermes"
    )  # HERMES_HOME inside the workspace: its config, data, cache and plugins stay guarded
    for sub in ("data", "cache", "plugins"):
        (hermes / sub).mkdir(parents=True)
    (hermes / "config.toml").write_text("")
    yield home, ws, hermes


KNOWN = [
    "hermes/config.toml", "hermes/data/x", "hermes/plugins/p.py", "hermes/cache", "to_key", "src/to_aws/credentials",
    "to_src/a.py", "to_src/../.env", "to_outside/x.txt", ".git/hooks/pre-commit", ".git/config", "src/.env.local",
    "dangling", "loop/x", "src/nested/x.txt", ".ssh/id_rsa", ".npmrc", ".bashrc", ".aws/credentials",
]  # fmt: skip
paths = st.one_of(
    st.lists(st.sampled_from(PARTS), min_size=1, max_size=6).map("/".join), st.sampled_from(KNOWN)
)
prefixes = st.sampled_from(["", "", "/", "~/", "WS/", "WS//", "/tmp/", "/etc/"])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prefix=prefixes, rest=paths, op=st.sampled_from(["read", "write"]))
def test_the_judge_agrees_with_check_path(
    tree: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch, prefix: str, rest: str, op: str
) -> None:
    home, ws, hermes = tree
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HERMES_HOME", str(hermes))
    path = prefix.replace("WS", str(ws)) + rest
    judge = PathJudge(op, ws)  # type: ignore[arg-type]
    for _ in range(2):  # and again, from the judge's caches
        try:
            expected = check_path(path, op, ws)  # type: ignore[arg-type]
        except ValueError as exc:
            with pytest.raises(ValueError) as raised:
                judge.check(path)
            assert type(raised.value) is type(exc)
            continue
        got = judge.check(path)
        assert (got.decision, got.reason, got.resolved, got.inside_workspace) == (
            expected.decision,
            expected.reason,
            expected.resolved,
            expected.inside_workspace,
        ), path


def test_one_judge_serves_a_whole_listing(
    tree: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every file of the tree, as a walker reports it, judged by one judge as by check_path."""
    home, ws, hermes = tree
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HERMES_HOME", str(hermes))
    judge = PathJudge("read", ws)
    listed = [os.path.join(d, name) for d, dirs, files in os.walk(ws) for name in dirs + files]
    assert len(listed) > 15
    for path in listed:
        assert judge.check(path) == check_path(path, "read", ws), path
    refused = [p for p in listed if not judge.allowed(p)]
    assert {os.path.basename(p) for p in refused} >= {"to_key", "to_aws", ".env", "config.toml"}


def test_the_judge_refuses_what_check_path_refuses_for_a_bad_op(tree: tuple[Path, Path, Path]) -> None:
    with pytest.raises(ValueError):
        PathJudge("delete", tree[1])  # type: ignore[arg-type]
    judge = PathJudge("read", tree[1])
    for bad in ("", "a\x00b", "x" * 300):
        with pytest.raises(ValueError):
            judge.check(bad)
        assert not judge.allowed(bad)
