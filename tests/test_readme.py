"""The README's Python blocks run as written: the library example, the plugin, and the plugin's test."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text("utf-8"), re.DOTALL)


def block(marker: str) -> str:
    found = [b for b in BLOCKS if marker in b]
    assert len(found) == 1, f"expected one python block of the README containing {marker!r}"
    return str(found[0])


def test_every_python_block_is_covered_here() -> None:
    markers = ("system = ToolSystem.load()", "# hermes_shout/__init__.py", "def test_shout(")
    assert sorted(BLOCKS) == sorted(block(m) for m in markers)


def test_the_library_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # its workspace: the repository, where README.md is
    code = compile(block("system = ToolSystem.load()"), "README.md", "exec")  # no top-level await
    namespace: dict[str, Any] = {"__name__": "readme_example"}
    exec(code, namespace)
    assert namespace["result"].startswith("     1|# hermes-tools")
    assert namespace["text"] == namespace["result"]
    assert namespace["outcome"].status in ("ok", "denied")  # `ls` runs, or an approval policy refuses it
    assert len(namespace["results"]) == 2 and all(isinstance(r, str) for r in namespace["results"])
    assert any(t["function"]["name"] == "read_file" for t in namespace["tools"])


def test_the_plugin_and_its_test_run(pytester: pytest.Pytester) -> None:
    package = pytester.path / "hermes_shout"
    package.mkdir()
    (package / "__init__.py").write_text(block("# hermes_shout/__init__.py"))
    pytester.makepyfile(test_shout=textwrap.dedent(block("def test_shout(")))
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
