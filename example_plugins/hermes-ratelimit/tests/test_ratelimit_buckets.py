"""Config parsing, the in-memory buckets and the limiter's messages."""

from __future__ import annotations

import threading

import pytest
from hermes_ratelimit.buckets import Bucket, MemoryBackend
from hermes_ratelimit.config import ConfigError, LimitConfig, Rate
from hermes_ratelimit.limiter import RateLimiter, format_wait


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def limiter(section: dict, clock: Clock) -> RateLimiter:
    return RateLimiter(LimitConfig.parse(section), MemoryBackend(clock))


def test_rate_windows_and_default_capacity() -> None:
    assert Rate.parse({"per_minute": 30}, "x") == Rate(capacity=30.0, refill_per_second=0.5)
    assert Rate.parse({"capacity": 5, "per_hour": 36}, "x") == Rate(capacity=5.0, refill_per_second=0.01)
    assert Rate.parse({"per_second": 10}, "x").refill_per_second == 10.0


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"backend": "sqlite"}, "backend must be 'memory' or 'redis'"),
        ({"global": {"capacity": 5}}, "exactly one of per_second"),
        ({"global": {"per_second": 1, "per_minute": 1}}, "exactly one of per_second"),
        ({"global": {"per_second": 0}}, "per_second must be a positive number"),
        ({"global": {"per_second": True}}, "per_second must be a positive number"),
        ({"session": {"per_second": 1, "capacity": 0.5}}, "capacity must be at least 1"),
        ({"session": {"per_second": 1, "burst": 3}}, "unknown key"),
        (
            {"tools": {"terminal": {"per_minute": 5, "per_session": "yes"}}},
            "per_session must be true or false",
        ),
        ({"tools": {"terminal": 5}}, "tools.terminal must be a table"),
        ({"limits": {}}, "unknown key"),
        ({"on_backend_error": "maybe"}, "on_backend_error"),
        ({"redis_url": ""}, "redis_url must be a non-empty string"),
    ],
)
def test_bad_config_is_rejected_with_its_key(section: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        LimitConfig.parse(section)


def test_empty_config_allows_everything() -> None:
    lim = RateLimiter(LimitConfig.parse({}))
    assert lim.config.empty
    assert all(lim.check("terminal").allowed for _ in range(1000))


def test_tool_bucket_blocks_then_refills() -> None:
    clock = Clock()
    lim = limiter({"tools": {"terminal": {"capacity": 2, "per_minute": 6}}}, clock)
    assert lim.check("terminal").allowed
    assert lim.check("terminal").allowed
    verdict = lim.check("terminal")
    assert not verdict.allowed
    assert verdict.reason == "rate limit for tool 'terminal' exceeded; retry in 10.0 s"
    assert lim.check("read_file").allowed  # other tools have no rule
    clock.now += 4.0
    assert lim.check("terminal").reason.endswith("retry in 6.0 s")
    clock.now += 6.0
    assert lim.check("terminal").allowed
    assert not lim.check("terminal").allowed


def test_wildcard_rule_gives_each_tool_its_own_bucket() -> None:
    clock = Clock()
    lim = limiter({"tools": {"*": {"capacity": 1, "per_hour": 1}, "web": {"per_second": 100}}}, clock)
    assert lim.check("a").allowed and lim.check("b").allowed
    assert not lim.check("a").allowed and not lim.check("b").allowed
    assert all(lim.check("web").allowed for _ in range(50))


def test_sessions_have_separate_buckets() -> None:
    clock = Clock()
    lim = limiter({"session": {"capacity": 2, "per_second": 1}}, clock)
    assert lim.check("x", "s1").allowed and lim.check("y", "s1").allowed
    verdict = lim.check("z", "s1")
    assert verdict.reason == "rate limit for this session exceeded; retry in 1.0 s"
    assert lim.check("x", "s2").allowed


def test_per_session_tool_rule() -> None:
    clock = Clock()
    lim = limiter({"tools": {"terminal": {"capacity": 1, "per_minute": 1, "per_session": True}}}, clock)
    assert lim.check("terminal", "a").allowed
    assert not lim.check("terminal", "a").allowed
    assert lim.check("terminal", "b").allowed


def test_global_bucket_and_all_or_nothing() -> None:
    clock = Clock()
    lim = limiter(
        {"global": {"capacity": 3, "per_second": 1}, "tools": {"terminal": {"capacity": 1, "per_minute": 1}}},
        clock,
    )
    assert lim.check("terminal").allowed
    # terminal is dry: the refusal must not take a global token
    for _ in range(5):
        assert lim.check("terminal").reason.startswith("rate limit for tool 'terminal'")
    assert lim.check("a").allowed and lim.check("b").allowed
    verdict = lim.check("c")
    assert verdict.reason == "global rate limit for tool calls exceeded; retry in 1.0 s"


def test_the_longest_wait_is_reported() -> None:
    clock = Clock()
    lim = limiter(
        {"global": {"capacity": 1, "per_second": 1}, "tools": {"t": {"capacity": 1, "per_minute": 1}}}, clock
    )
    assert lim.check("t").allowed
    verdict = lim.check("t")
    assert verdict.reason.startswith("rate limit for tool 't'") and verdict.retry_after == pytest.approx(60.0)


def test_format_wait_rounds_up() -> None:
    assert format_wait(2.21) == "2.3 s"
    assert format_wait(2.3) == "2.3 s"
    assert format_wait(0.01) == "0.1 s"


def test_memory_backend_is_exact_under_threads() -> None:
    backend = MemoryBackend(Clock())
    bucket = [Bucket("k", Rate(capacity=100, refill_per_second=0.001))]
    allowed = []

    def worker() -> None:
        allowed.append(sum(backend.take(bucket).allowed for _ in range(50)))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(allowed) == 100


def test_memory_backend_forgets_full_buckets() -> None:
    clock = Clock()
    backend = MemoryBackend(clock)
    rate = Rate(capacity=1, refill_per_second=1)
    for i in range(4095):
        backend.take([Bucket(f"s{i}", rate)])
    assert len(backend) == 4095
    clock.now += 2
    backend.take([Bucket("last", rate)])
    assert len(backend) == 1  # only "last", which has just spent its token
