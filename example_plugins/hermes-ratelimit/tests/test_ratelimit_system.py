"""hermes-ratelimit through ``ToolSystem`` (the shipped ``make_tool_system`` fixture): blocked calls, sessions,
isolation, the limiter's life, Redis across processes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import hermes_ratelimit
import pytest
from ratelimit_support import ToyTools

from hermes_core import ToolSystem


@pytest.fixture
def load(make_tool_system: Callable[..., ToolSystem]) -> Callable[[dict[str, Any]], ToolSystem]:
    """``load(section)``: a system with the toy tools and the limiter configured by ``section``."""

    def make(section: dict[str, Any]) -> ToolSystem:
        return make_tool_system(ToyTools(), hermes_ratelimit, config={"plugins": {"ratelimit": section}})

    return make


def test_no_config_no_limits(load: Any) -> None:
    with load({}) as system:
        assert all(system.call("ping") == "pong" for _ in range(200))


def test_tool_limit_blocks_with_retry_hint(load: Any) -> None:
    with load({"tools": {"echo": {"capacity": 2, "per_minute": 2}}}) as system:
        assert system.call("echo", {"text": "a"}) == "echo: a"
        assert system.call("echo", {"text": "b"}) == "echo: b"
        outcome = system.call_outcome("echo", {"text": "c"})
        assert (outcome.status, outcome.error_kind) == ("blocked", "blocked")
        message = json.loads(outcome.result)["error"]
        assert "rate limit for tool 'echo' exceeded; retry in " in message
        seconds = float(message.rsplit("retry in ", 1)[1].removesuffix(" s"))
        assert 29.0 < seconds <= 30.0
        assert system.call("ping") == "pong"


def test_session_limit_through_call_session_id(load: Any) -> None:
    with load({"session": {"capacity": 1, "per_hour": 1}}) as system:
        assert system.call("ping", session_id="alice") == "pong"
        assert system.call_outcome("ping", session_id="alice").status == "blocked"
        assert "rate limit for this session" in system.call("echo", session_id="alice")
        assert system.call("ping", session_id="bob") == "pong"


def test_global_limit(load: Any) -> None:
    with load({"global": {"capacity": 3, "per_hour": 1}}) as system:
        results = [system.call_outcome(n).status for n in ("ping", "echo", "ping", "echo")]
        assert results == ["ok", "ok", "ok", "blocked"]


def test_two_systems_have_separate_memory_buckets(load: Any) -> None:
    section = {"tools": {"ping": {"capacity": 1, "per_hour": 1}}}
    with load(section) as a, load(section) as b:
        assert a.call("ping") == "pong"
        assert b.call("ping") == "pong"
        assert a.call_outcome("ping").status == "blocked"


def test_misconfigured_section_blocks_every_call(load: Any) -> None:
    with load({"tools": {"echo": {"per_fortnight": 1}}}) as system:
        outcome = system.call_outcome("ping")
        assert outcome.status == "blocked"
        assert "rate limiter is misconfigured" in outcome.result and "per_fortnight" in outcome.result


def test_an_ill_typed_value_is_a_doctor_error_naming_the_key(load: Any) -> None:
    from hermes_core.doctor import run_doctor

    with load({"global": {"per_minute": "fast"}, "tools": {"echo": {"per_fortnight": 1}}}) as system:
        [record] = [r for r in system.plugin_records() if r.name == "hermes_ratelimit"]
        messages = [p["message"] for p in record.config_problems]
        assert any("global.per_minute: expected number" in m and '"fast"' in m for m in messages), messages
        assert any("per_fortnight" in m for m in messages), messages
        problems = [p for p in run_doctor(system).problems if p.check == "config"]
        assert problems and all(p.severity == "error" and p.plugin == "hermes_ratelimit" for p in problems)
        assert any("hermes config set plugins.ratelimit.global.per_minute" in p.fix for p in problems)
    with load({"backend": "memory", "global": {"capacity": 5, "per_second": 1}}) as system:
        [record] = [r for r in system.plugin_records() if r.name == "hermes_ratelimit"]
        assert record.config_problems == []


def test_one_limiter_per_system_closed_with_it(load: Any) -> None:
    with load({"tools": {"ping": {"capacity": 5, "per_hour": 1}}}) as system:
        system.call("ping")
        limiter = system.stash("ratelimit.limiter", lambda: None)
        assert isinstance(limiter, hermes_ratelimit.RateLimiter) and len(limiter.backend) == 1
        system.call("echo")
        assert system.stash("ratelimit.limiter", lambda: None) is limiter  # not rebuilt per call
        system.close()
        assert len(limiter.backend) == 0  # closed: the buckets are gone


def test_entry_point_is_declared() -> None:
    eps = {ep.name: ep.value for ep in entry_points(group="hermes.tools")}
    assert eps.get("ratelimit") == "hermes_ratelimit"


def test_redis_systems_share_one_budget(load: Any, redis_url: str) -> None:
    section = {"backend": "redis", "redis_url": redis_url, "tools": {"ping": {"capacity": 3, "per_hour": 1}}}
    with load(section) as a, load(section) as b:
        statuses = [s.call_outcome("ping").status for s in (a, b, a, b, a)]
    assert statuses == ["ok", "ok", "ok", "blocked", "blocked"]


GATEWAY = textwrap.dedent(
    """
    import json, os, sys, time
    sys.path.insert(0, sys.argv[4])
    from ratelimit_support import load

    url, sync_dir, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
    section = {"backend": "redis", "redis_url": url, "global": {"capacity": 30, "per_hour": 1},
               "tools": {"echo": {"capacity": 1000, "per_second": 1000}}}
    system = load(section)
    system.call("echo", {"text": "warm-up"})  # connects and loads the Lua script; takes one global token
    # every gateway takes its warm-up token before any of them pings (a loaded machine starts them slowly)
    open(f"{sync_dir}/ready-{time.time_ns()}", "w").close()
    while not os.path.exists(f"{sync_dir}/go"):
        time.sleep(0.005)
    statuses = [system.call_outcome("ping").status for _ in range(calls)]
    system.close()
    print(json.dumps({"ok": statuses.count("ok"), "blocked": statuses.count("blocked")}))
    """
)


def test_gateway_processes_share_one_budget(redis_url: str, tmp_path: Path) -> None:
    here = str(Path(__file__).parent)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", GATEWAY, redis_url, str(tmp_path), "15", here],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("ready-*"))) < 3 and time.monotonic() < deadline:
        assert all(p.poll() is None for p in procs), [
            p.communicate()[1] for p in procs if p.poll() is not None
        ]
        time.sleep(0.01)
    (tmp_path / "go").touch()
    totals = {"ok": 0, "blocked": 0}
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        for key, value in json.loads(out.strip().splitlines()[-1]).items():
            totals[key] += value
    # 30 global tokens: 3 went to the warm-up calls, so exactly 27 of the 45 pings may run
    assert totals == {"ok": 27, "blocked": 18}
