"""Names of MCP tools: provider-safe, qualified per server on a clash, the same whatever order servers connect in."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_core.mcp import plan_names, safe_tool_name
from hermes_core.mcp.naming import ServerTools

SAFE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=100))
def test_safe_names_fit_every_provider(name: str) -> None:
    safe = safe_tool_name(name)
    assert SAFE.fullmatch(safe), safe
    if SAFE.fullmatch(name):
        assert safe == name


def test_a_name_two_servers_offer_is_qualified_for_both() -> None:
    plan = plan_names(
        [ServerTools("one", None, ["echo", "add"]), ServerTools("two", None, ["echo", "pid"])], {}
    )
    assert plan.names == {
        "one": {"one_echo": "echo", "add": "add"},
        "two": {"two_echo": "echo", "pid": "pid"},
    }
    assert plan.clashes["one"] == [{"tool": "echo", "name": "one_echo", "with": ["MCP server 'two'"]}]
    assert plan.skipped == {"one": {}, "two": {}}


def test_a_name_a_built_in_owns_is_qualified_and_the_built_in_keeps_it() -> None:
    plan = plan_names([ServerTools("fs", None, ["read_file", "stat"])], {"read_file": "file"})
    assert plan.names["fs"] == {"fs_read_file": "read_file", "stat": "stat"}
    assert plan.clashes["fs"] == [{"tool": "read_file", "name": "fs_read_file", "with": ["toolset 'file'"]}]


def test_a_prefix_names_every_tool_and_settles_the_clash() -> None:
    plan = plan_names([ServerTools("one", "gh_", ["echo"]), ServerTools("two", None, ["echo"])], {})
    assert plan.names == {"one": {"gh_echo": "echo"}, "two": {"echo": "echo"}}
    assert plan.clashes == {"one": [], "two": []}


def test_an_empty_prefix_keeps_bare_names_and_the_other_server_yields() -> None:
    plan = plan_names([ServerTools("one", "", ["echo"]), ServerTools("two", None, ["echo"])], {})
    assert plan.names == {"one": {"echo": "echo"}, "two": {"two_echo": "echo"}}


def test_a_name_still_taken_twice_is_left_out_for_every_claimant() -> None:
    plan = plan_names([ServerTools("a", "x_", ["echo"]), ServerTools("b", "x_", ["echo"])], {"x_y": "local"})
    assert plan.names == {"a": {}, "b": {}}
    assert "set a distinct prefix in [mcp.servers.a]" in plan.skipped["a"]["echo"]
    plan = plan_names([ServerTools("a", "", ["read_file"])], {"read_file": "file"})
    assert plan.names == {"a": {}}
    assert "toolset 'file'" in plan.skipped["a"]["read_file"]


def test_unsafe_and_colliding_names_within_one_server() -> None:
    plan = plan_names([ServerTools("s", None, ["a.b", "a_b", "9lives"])], {})
    assert plan.names["s"] == {"a_b": "a.b", "a_b_2": "a_b", "_9lives": "9lives"}
    long = plan_names([ServerTools("x" * 60, None, ["tool"]), ServerTools("y", None, ["tool"])], {})
    assert all(SAFE.fullmatch(n) for names in long.names.values() for n in names)


_names = st.lists(st.sampled_from(["echo", "add", "read_file", "a.b", "a_b", "pid"]), max_size=5, unique=True)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["one", "two", "three", "four"]), st.sampled_from([None, None, "p_", ""]), _names
        ),
        max_size=4,
        unique_by=lambda t: t[0],
    ),
    st.randoms(use_true_random=False),
)
def test_names_do_not_depend_on_server_order_and_never_collide(servers: list, rnd: object) -> None:
    taken = {"read_file": "file"}
    plan = plan_names([ServerTools(*s) for s in servers], taken)
    shuffled = list(servers)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    again = plan_names([ServerTools(*s) for s in shuffled], taken)
    assert plan.names == again.names and plan.skipped == again.skipped
    every = [n for names in plan.names.values() for n in names]
    assert len(every) == len(set(every)), "one name went to two tools"
    assert not set(every) & set(taken)
    for server, _, tools in servers:  # every tool is either named or left out with a reason, not both
        named, left_out = set(plan.names[server].values()), set(plan.skipped[server])
        assert named | left_out == set(tools) and not named & left_out
