"""Refuse tool schemas that are not valid JSON Schema: ``SchemaChecker``, the registry's schema check.

A schema is checked against the 2020-12 metaschema by ``_metacheck``: a few microseconds, less than hashing
it would cost, so those verdicts are not cached. A schema naming another dialect goes to jsonschema, which
costs milliseconds (and about 180 ms to import); those verdicts are keyed by a hash of the canonical schema
text, remembered in memory and in a small file under the cache dir, so a warm start checks hashes only.
Invalid schemas are never cached.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._blake import blake2b
from ..fileio import atomic_write
from ..registry import InvalidSchemaError
from ._metacheck import check

__all__ = ["SchemaChecker", "schema_problems"]

_known_valid: set[str] = set()  # process-wide: validity depends on the content only
_lock = threading.Lock()


def _key(params: Any) -> str:
    text = json.dumps(params, sort_keys=True, separators=(",", ":"), default=repr)
    return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def schema_problems(params: Any) -> list[str]:
    """Check a parameters schema against its metaschema (Draft 2020-12 unless ``$schema`` says otherwise)."""
    found = check(params)
    if found is not None:
        return found
    return metaschema_problems(params)


def metaschema_problems(params: Any) -> list[str]:
    """``schema_problems`` through ``jsonschema`` itself (any dialect it knows; slow)."""
    from jsonschema import exceptions, validators

    try:
        cls = validators.validator_for(params, default=validators.Draft202012Validator)
        cls.check_schema(params)
    except exceptions.SchemaError as err:
        where = "/".join(str(p) for p in err.path) or "(top level)"
        return [f"{err.message} at {where}"]
    except Exception as err:  # a $schema that names an unknown dialect, unhashable junk...
        return [f"{type(err).__name__}: {err}"]
    return []


class SchemaChecker:
    """The registry's schema check (a ``hermes_core.registry.SchemaCheck``): metaschema verdicts cached by hash,
    on disk under ``cache_path``."""

    def __init__(self, cache_path: Path | None = None) -> None:
        self.cache_path = cache_path
        self._loaded = cache_path is None
        self._new = False

    def _load(self) -> None:
        with _lock:
            if self._loaded:
                return
            self._loaded = True
            try:
                assert self.cache_path is not None
                data = json.loads(self.cache_path.read_text("utf-8"))
                if isinstance(data, list):
                    _known_valid.update(h for h in data if isinstance(h, str))
            except (OSError, ValueError):
                pass  # no cache yet, or a corrupt one: rescans fill it again

    def __call__(self, name: str, schema: Mapping[str, Any]) -> None:
        params = schema.get("parameters", {"type": "object", "properties": {}})
        found = check(params)  # 2020-12: checking costs less than hashing for the cache
        if found == []:
            return
        if found:
            raise InvalidSchemaError(f"tool {name!r}: parameters are not valid JSON Schema: {found[0]}")
        try:
            key = _key(params)
        except (TypeError, ValueError) as err:
            raise InvalidSchemaError(f"tool {name!r}: schema is not JSON-serialisable ({err})") from None
        if key in _known_valid:
            return
        if not self._loaded:
            self._load()
            if key in _known_valid:
                return
        problems = schema_problems(params)
        if problems:
            raise InvalidSchemaError(f"tool {name!r}: parameters are not valid JSON Schema: {problems[0]}")
        with _lock:
            _known_valid.add(key)
            self._new = True

    def flush(self) -> None:
        """Write newly learned verdicts to the cache file (atomically); errors only cost a rescan later."""
        if not self._new or self.cache_path is None:
            return
        with _lock:
            data = json.dumps(sorted(_known_valid))
        try:  # a cache: losing it in a crash only costs a recheck, so no fsync
            atomic_write(self.cache_path, data, fsync=False)
            self._new = False
        except OSError:
            pass
