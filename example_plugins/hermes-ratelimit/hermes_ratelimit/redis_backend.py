"""The Redis backend: one Lua script refills and takes atomically, on the server's clock.

Every gateway process pointing at the same Redis draws from the same buckets, and because the script
reads ``TIME`` on the server, the processes' own clocks never matter. All keys share one hash tag
(the default prefix ``{hermes-ratelimit}``) so the multi-key script also works on a Redis Cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .buckets import Bucket, TakeResult

__all__ = ["TAKE_SCRIPT", "RedisBackend"]

# KEYS: the buckets. ARGV: capacity_1, rate_1, capacity_2, rate_2, ...
# Returns {1} when a token was taken from every bucket, else {0, seconds_to_wait (string), blocking_index}.
TAKE_SCRIPT = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local levels = {}
local wait, blocker = 0, 0
for i = 1, #KEYS do
  local capacity = tonumber(ARGV[2 * i - 1])
  local rate = tonumber(ARGV[2 * i])
  local state = redis.call('HMGET', KEYS[i], 'tokens', 'at')
  local tokens, at = tonumber(state[1]), tonumber(state[2])
  if tokens == nil or at == nil then
    tokens, at = capacity, now
  end
  if now > at then
    tokens = tokens + (now - at) * rate
  end
  if tokens > capacity then
    tokens = capacity
  end
  levels[i] = tokens
  if tokens < 1 then
    local need = (1 - tokens) / rate
    if need > wait then
      wait, blocker = need, i
    end
  end
end
if blocker > 0 then
  return {0, tostring(wait), blocker - 1}
end
for i = 1, #KEYS do
  local capacity = tonumber(ARGV[2 * i - 1])
  local rate = tonumber(ARGV[2 * i])
  redis.call('HSET', KEYS[i], 'tokens', tostring(levels[i] - 1), 'at', tostring(now))
  redis.call('PEXPIRE', KEYS[i], math.ceil(capacity / rate * 1000) + 1000)
end
return {1}
"""


class RedisBackend:
    """Buckets in Redis hashes, shared by every process that uses the same server and key prefix."""

    def __init__(self, url: str, *, socket_timeout: float = 2.0) -> None:
        import redis

        self.url = url
        self._client = redis.Redis.from_url(
            url, socket_timeout=socket_timeout, socket_connect_timeout=socket_timeout
        )
        self._script: Any = self._client.register_script(TAKE_SCRIPT)  # EVALSHA, loading it on NOSCRIPT

    def take(self, buckets: Sequence[Bucket]) -> TakeResult:
        args: list[float] = []
        for bucket in buckets:
            args += [bucket.rate.capacity, bucket.rate.refill_per_second]
        reply = self._script(keys=[b.key for b in buckets], args=[repr(a) for a in args])
        if int(reply[0]) == 1:
            return TakeResult(True)
        return TakeResult(False, float(reply[1]), int(reply[2]))

    def close(self) -> None:
        self._client.close()
