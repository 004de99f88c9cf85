"""``session_search`` and the public ``SessionStore`` API: FTS5 search, safe queries, concurrent recorders."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_builtin.sessions import QueryError, SessionStore, build_match_query, fts5_available
from hermes_core import ToolSystem

T0 = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC


@pytest.fixture
def store(builtin_system: ToolSystem) -> Any:
    with SessionStore(builtin_system.data_dir) as s:
        s.record("deploy-1", "user", "How do I rotate the API keys for production?", timestamp=T0)
        s.record(
            "deploy-1",
            "assistant",
            "Run the vault rotation job, then restart the workers.",
            timestamp=T0 + 60,
        )
        s.record("cooking", "user", "A good recipe for sourdough bread please", timestamp=T0 + 3600)
        s.record("cooking", "assistant", "Feed the starter the night before baking.", timestamp=T0 + 3660)
        yield s


def test_tool_is_visible_when_fts5_exists(builtin_system: ToolSystem) -> None:
    assert fts5_available()
    names = [d["function"]["name"] for d in builtin_system.definitions()]
    assert "session_search" in names


def test_hits_show_session_time_role_and_snippet(builtin_system: ToolSystem, store: SessionStore) -> None:
    out = builtin_system.call("session_search", {"query": "rotate keys"})
    assert out.splitlines() == [
        "1 match(es) for 'rotate keys':",
        "- session deploy-1 · 2023-11-14 22:13 · user: How do I [rotate] the API [keys] for production?",
    ]


def test_stemming_phrases_prefixes_or_and_filters(builtin_system: ToolSystem, store: SessionStore) -> None:
    # porter stemming: "rotation" finds "rotate"
    assert out_sessions(builtin_system.call("session_search", {"query": "rotation"})) == [
        "deploy-1",
        "deploy-1",
    ]
    assert "[API keys]" in builtin_system.call("session_search", {"query": '"API keys"'})
    assert "no past messages" in builtin_system.call("session_search", {"query": '"keys API"'}).lower()
    assert "[sourdough]" in builtin_system.call("session_search", {"query": "sourd*"})
    either = builtin_system.call("session_search", {"query": "sourdough OR vault"})
    assert sorted(out_sessions(either)) == ["cooking", "deploy-1"]
    only = builtin_system.call(
        "session_search", {"query": "the", "session_id": "cooking", "role": "assistant"}
    )
    assert out_sessions(only) == ["cooking"] and "starter" in only
    limited = builtin_system.call("session_search", {"query": "the", "limit": 1})
    assert limited.startswith("1 match(es)")


def out_sessions(text: str) -> list[str]:
    return [line.split()[2] for line in text.splitlines() if line.startswith("- session ")]


@pytest.mark.parametrize(
    "query", ['"', "NEAR(a b", "AND OR NOT", "col:value", "'; DROP TABLE messages; --", "^x -y +z", "a)(b"]
)
def test_fts_syntax_never_leaks_as_an_sqlite_error(
    builtin_system: ToolSystem, store: SessionStore, query: str
) -> None:
    outcome = builtin_system.call_outcome("session_search", {"query": query})
    if outcome.ok:
        assert "match" in outcome.result.lower()
    else:
        assert outcome.error_kind == "tool_error"
        assert "no words to search for" in outcome.result
    assert store.count() == 4


@pytest.mark.parametrize("query", ["*", '""', "!!! ???", "OR"])
def test_queries_without_words_are_clear_tool_errors(
    builtin_system: ToolSystem, store: SessionStore, query: str
) -> None:
    outcome = builtin_system.call_outcome("session_search", {"query": query})
    assert outcome.status == "error"
    assert "the query has no words to search for" in outcome.result


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=60))
def test_any_text_builds_a_valid_match_expression(text: str) -> None:
    import sqlite3

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE m USING fts5(content)")
    conn.execute("INSERT INTO m VALUES ('hello world')")
    try:
        expr = build_match_query(text)
    except QueryError:
        return
    conn.execute("SELECT * FROM m WHERE m MATCH ?", (expr,)).fetchall()


def test_record_validates_its_arguments(tmp_path: Path) -> None:
    with SessionStore(tmp_path) as s:
        with pytest.raises(ValueError):
            s.record("", "user", "x")
        with pytest.raises(TypeError):
            s.record("a", "user", None)  # type: ignore[arg-type]
        assert s.record("a", "user", "y" * 200_000) > 0
        assert len(s.search("y*", 1)) == 1


def test_concurrent_recorders_in_processes(builtin_system: ToolSystem) -> None:
    script = textwrap.dedent(
        """
        import sys
        from hermes_builtin.sessions import SessionStore
        with SessionStore(sys.argv[1]) as s:
            for i in range(40):
                s.record(f"proc-{sys.argv[2]}", "user", f"message number {i} about zebras")
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(builtin_system.data_dir), str(n)])
        for n in range(4)
    ]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    with SessionStore(builtin_system.data_dir) as s:
        assert s.count() == 160
    out = builtin_system.call("session_search", {"query": "zebras", "limit": 50})
    assert out.startswith("50 match(es)")
