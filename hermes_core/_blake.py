"""``blake2b`` without importing :mod:`hashlib`, which loads OpenSSL's library: ~3 ms of every start-up, spent
on the digests that only key the start-up caches (schema verdicts, drop-in scans, sandbox readiness)."""

from __future__ import annotations

try:
    from _blake2 import blake2b
except ImportError:  # an interpreter built without its own BLAKE2
    from hashlib import blake2b

__all__ = ["blake2b"]
