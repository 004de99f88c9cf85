"""Whether any model is configured: answered without loading the model specs (``_config``).

The delegation tools ask this in their check at every start; with no ``[models]`` table (the usual case) the
answer needs neither ``ModelSpec`` nor the rules that validate a model's table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import Config

NO_MODEL = (
    "{where}: no model is configured; add a [models.NAME] table with base_url (and api_key for a hosted API), "
    "see the README"
)


def where(config: Config) -> str:
    """How a message names the configuration file."""
    return str(config.path) if config.path is not None else "<config>"


def no_model(config: Config) -> str | None:
    """What ``resolve_spec`` says when the ``[models]`` table has no model in it; None when it has one."""
    table = config.data.get("models") or {}
    if isinstance(table, Mapping) and not any(isinstance(v, Mapping) for v in table.values()):
        return NO_MODEL.format(where=where(config))
    return None
