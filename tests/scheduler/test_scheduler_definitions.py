"""The scheduler's and the board's tool definitions stay small: none over 1,000 characters as sent."""

from __future__ import annotations

import json
from typing import Any

from hermes_builtin.toolsets import KANBAN_TOOLS


def test_no_cron_or_kanban_definition_is_over_1000_characters(make_system: Any) -> None:
    system = make_system()
    sizes = {
        d["function"]["name"]: len(json.dumps(d)) for d in system.definitions(["cronjob", *KANBAN_TOOLS])
    }
    assert set(sizes) == {"cronjob", *KANBAN_TOOLS}
    assert {name: n for name, n in sizes.items() if n > 1000} == {}
