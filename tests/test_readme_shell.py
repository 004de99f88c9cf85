"""The README's shell blocks run as written: on a copy of the repository (a fresh clone), in the new venv the
set-up block makes, one after the other as a reader would type them. Blocks that are not safe or not possible
here are listed with the reason, and every other ``bash`` block must run."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text("utf-8"), re.DOTALL)

# what a block contains -> why this test does not run it
NOT_RUN = {
    "hermes chat": "needs a chat model (tests/agent runs the agent loop against a scripted model server)",
    "apt-get install": "installs system packages as root; .ci/run does it on CI",
}

# the venv, the pip cache and a build may take minutes on a cold, busy machine
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

_NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv", ".nox", "node", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis"
)
_SCRUBBED = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")


def runnable() -> list[str]:
    return [b for b in BLOCKS if not any(marker in b for marker in NOT_RUN)]


def test_every_bash_block_is_run_or_listed_with_a_reason() -> None:
    skipped = [b for b in BLOCKS if b not in runnable()]
    assert len(skipped) == len(NOT_RUN), "each reason in NOT_RUN stands for one block, and is still needed"
    assert any("python3 -m venv" in b for b in runnable()), "the set-up block makes the venv the others use"


def test_the_readme_shell_blocks_run_in_a_fresh_venv(tmp_path: Path) -> None:
    clone = tmp_path / "hermes-tools"
    shutil.copytree(ROOT, clone, ignore=_NOT_SOURCES, symlinks=True)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_") and k not in _SCRUBBED}
    env.update(HERMES_HOME=str(home), PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_QUIET="1")
    script = "set -euo pipefail\n" + "\n".join(runnable())
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=1400,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, (
        f"the README's commands failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    )
    out = done.stdout
    assert "read_file" in out  # hermes tools list
    assert "     1|# hermes-tools" in out  # hermes call read_file path=README.md limit=5
    assert re.search(r"^weather\t", out, re.MULTILINE) and re.search(r"^ratelimit\t", out, re.MULTILINE)
    assert "timeout = 60" in (home / "config.toml").read_text("utf-8")  # hermes config set
    assert re.search(r"\d+ passed", out)  # the weather plugin's own tests
    assert (clone / ".venv" / "bin" / "hermes").exists()  # everything ran in the README's venv
