"""Through the real pipeline: read_file shows ordinary code exactly (so a patch copied from it applies) and
never shows a secret in the same file."""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest

from hermes_core import ToolSystem

pytestmark = pytest.mark.usefixtures("fake_home")

SOURCE = """\
import os
from typing import Optional


class Client:
    def __init__(self, username: str, password: Optional[str] = None, token: str | None = None) -> None:
        self.username = username
        self.password = password
        self.api_key = os.environ["OPENAI_API_KEY"]
        self.token = token or get_token()
        credentials: Optional[Credentials] = None


def login(username, password=None):
    headers = {"Authorization": f"Bearer {token}"}
    return post("/login", auth=(username, password), headers=headers)
"""


def test_patch_copied_from_read_file_applies(builtin_system: ToolSystem, workspace: Path) -> None:
    rng = random.Random(5)
    key = "sk-proj-" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(47)) + "7"
    (workspace / "client.py").write_text(SOURCE + f'\nFALLBACK_KEY = "{key}"\n')
    shown = builtin_system.call("read_file", {"path": "client.py"})
    assert key not in shown and "[REDACTED]" in shown
    lines = [line.split("|", 1)[1] for line in shown.splitlines() if "|" in line]
    assert "\n".join(lines[: SOURCE.count("\n")]) + "\n" == SOURCE  # every ordinary line exactly as on disk
    old = "\n".join(lines[13:15])  # copied from the model's view: def login(...) and the headers line
    assert "password=None" in old and "{token}" in old
    out = builtin_system.call(
        "patch", {"path": "client.py", "old_string": old, "new_string": old.replace("None", '""', 1)}
    )
    assert "error" not in out.lower(), out
    assert 'def login(username, password=""):' in (workspace / "client.py").read_text()


def test_search_results_are_redacted_too(builtin_system: ToolSystem, workspace: Path) -> None:
    rng = random.Random(6)
    token = "ghp_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(35)) + "7"
    (workspace / "ci.sh").write_text(f"export GH_TOKEN={token}\nexport GH_HOST=github.com\n")
    out = builtin_system.call("search_files", {"pattern": "GH_"})
    assert token not in out and "ci.sh:1:export GH_TOKEN=[REDACTED]" in out
    assert "ci.sh:2:export GH_HOST=github.com" in out
