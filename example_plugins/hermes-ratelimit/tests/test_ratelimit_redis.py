"""The Redis backend against a real redis-server: atomic, shared across processes, on the server's clock."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import pytest
from hermes_ratelimit.config import LimitConfig
from hermes_ratelimit.limiter import RateLimiter
from hermes_ratelimit.redis_backend import RedisBackend


def redis_limiter(url: str, **section: object) -> RateLimiter:
    return RateLimiter.from_section({"backend": "redis", "redis_url": url, **section})


def test_redis_bucket_blocks_and_says_when(redis_url: str) -> None:
    lim = redis_limiter(redis_url, tools={"terminal": {"capacity": 3, "per_minute": 3}})
    assert isinstance(lim.backend, RedisBackend)
    assert [lim.check("terminal").allowed for _ in range(4)] == [True, True, True, False]
    verdict = lim.check("terminal")
    assert verdict.reason.startswith("rate limit for tool 'terminal' exceeded; retry in ")
    assert 19.0 < verdict.retry_after <= 20.0
    lim.close()


def test_redis_refills_on_the_server_clock(redis_url: str) -> None:
    lim = redis_limiter(redis_url, **{"global": {"capacity": 1, "per_second": 20}})
    assert lim.check("a").allowed
    verdict = lim.check("a")
    assert not verdict.allowed and verdict.retry_after <= 0.05
    time.sleep(verdict.retry_after + 0.02)
    assert lim.check("a").allowed
    lim.close()


def test_redis_all_or_nothing_and_sessions(redis_url: str) -> None:
    lim = redis_limiter(
        redis_url,
        session={"capacity": 2, "per_hour": 1},
        tools={"terminal": {"capacity": 1, "per_hour": 1}},
    )
    assert lim.check("terminal", "s1").allowed
    assert lim.check("terminal", "s1").reason.startswith("rate limit for tool 'terminal'")
    # the refused call took no session token: s1 still has one left
    assert lim.check("read_file", "s1").allowed
    assert lim.check("read_file", "s1").reason.startswith("rate limit for this session exceeded")
    assert lim.check("read_file", "s2").allowed
    lim.close()


def test_keys_expire_once_full(redis_url: str) -> None:
    import redis

    lim = redis_limiter(redis_url, tools={"t": {"capacity": 2, "per_second": 1}})
    lim.check("t")
    client = redis.Redis.from_url(redis_url)
    ttl_ms = client.pttl("{hermes-ratelimit}:tool:t")
    assert 0 < ttl_ms <= 3000  # capacity / rate = 2 s, plus a second of slack
    client.close()
    lim.close()


def test_two_limiters_share_one_budget(redis_url: str) -> None:
    section = {"backend": "redis", "redis_url": redis_url, "global": {"capacity": 5, "per_hour": 1}}
    a, b = RateLimiter.from_section(section), RateLimiter.from_section(section)
    results = [lim.check("x").allowed for _ in range(4) for lim in (a, b)]
    assert sum(results) == 5
    a.close()
    b.close()


WORKER = textwrap.dedent(
    """
    import json, sys, time
    from hermes_ratelimit.limiter import RateLimiter

    url, start_at, calls = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    lim = RateLimiter.from_section({"backend": "redis", "redis_url": url,
                                    "tools": {"terminal": {"capacity": 25, "per_hour": 1}}})
    lim.check("warm-up")  # connect and load the script before the race starts
    while time.time() < start_at:
        pass
    allowed = sum(lim.check("terminal").allowed for _ in range(calls))
    print(json.dumps({"allowed": allowed}))
    """
)


def test_separate_processes_share_one_budget_exactly(redis_url: str) -> None:
    start_at = time.time() + 1.0
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, redis_url, str(start_at), "20"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    counts = []
    for proc in procs:
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        counts.append(json.loads(out)["allowed"])
    assert sum(counts) == 25  # 80 attempts, one budget of 25 tokens, no double spending


def test_redis_down_blocks_by_default_and_can_fail_open() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"redis://127.0.0.1:{port}/0"
    closed = redis_limiter(url, tools={"t": {"per_second": 1}})
    verdict = closed.check("t")
    assert not verdict.allowed
    assert verdict.reason == "the rate limiter is unavailable (ConnectionError); retry in a minute"
    opened = RateLimiter(
        LimitConfig.parse(
            {
                "backend": "redis",
                "redis_url": url,
                "on_backend_error": "allow",
                "tools": {"t": {"per_second": 1}},
            }
        )
    )
    assert opened.check("t").allowed


@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_both_backends_agree(backend: str, redis_url: str) -> None:
    section = {"backend": backend, "redis_url": redis_url, "tools": {"t": {"capacity": 4, "per_hour": 1}}}
    lim = RateLimiter.from_section(section)
    assert [lim.check("t").allowed for _ in range(6)] == [True] * 4 + [False] * 2
    lim.close()
