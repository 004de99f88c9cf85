"""Bucket storage: the ``Backend`` contract and the in-memory backend (one process, thread-safe)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from .config import Rate

__all__ = ["Backend", "Bucket", "MemoryBackend", "TakeResult"]


@dataclass(frozen=True, slots=True)
class Bucket:
    """One bucket to draw from: its storage key and its rate."""

    key: str
    rate: Rate


@dataclass(frozen=True, slots=True)
class TakeResult:
    """``allowed``, or the index of the bucket that ran dry and the seconds until it holds a token again."""

    allowed: bool
    retry_after: float = 0.0
    blocked_by: int = -1


class Backend(Protocol):
    """Takes one token from every bucket, or from none of them, atomically."""

    def take(self, buckets: Sequence[Bucket]) -> TakeResult: ...

    def close(self) -> None: ...


def refill(tokens: float, last: float, now: float, rate: Rate) -> float:
    """The bucket level at ``now`` after refilling since ``last``."""
    if now > last:
        tokens += (now - last) * rate.refill_per_second
    return min(rate.capacity, tokens)


class MemoryBackend:
    """Buckets in a dict under a lock: exact within one process, unknown to any other."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._state: dict[str, tuple[float, float, Rate]] = {}  # key -> (tokens, time of that level, rate)
        self._takes = 0

    def take(self, buckets: Sequence[Bucket]) -> TakeResult:
        with self._lock:
            now = self._clock()
            levels = []
            wait, blocker = 0.0, -1
            for i, bucket in enumerate(buckets):
                tokens, last, _ = self._state.get(bucket.key, (bucket.rate.capacity, now, bucket.rate))
                level = refill(tokens, last, now, bucket.rate)
                levels.append(level)
                if level < 1.0:
                    need = (1.0 - level) / bucket.rate.refill_per_second
                    if need > wait:
                        wait, blocker = need, i
            if blocker >= 0:
                return TakeResult(False, wait, blocker)
            for bucket, level in zip(buckets, levels, strict=True):
                self._state[bucket.key] = (level - 1.0, now, bucket.rate)
            self._takes += 1
            if self._takes % 4096 == 0:
                self._forget_full(now)
            return TakeResult(True)

    def _forget_full(self, now: float) -> None:
        """Drop buckets that have refilled completely: a missing bucket is a full one (bounds memory)."""
        full = [
            k for k, (t, last, rate) in self._state.items() if refill(t, last, now, rate) >= rate.capacity
        ]
        for key in full:
            del self._state[key]

    def __len__(self) -> int:
        return len(self._state)

    def close(self) -> None:
        with self._lock:
            self._state.clear()
