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
    markers = (
        "system = ToolSystem.load()",
        "from hermes_core.agent import",
        "def check_json(",
        "def build(",
        "# hermes_shout/__init__.py",
        "def test_shout(",
        "system.search_tools(",
    )
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


def test_the_agent_example_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Against a scripted OpenAI-compatible server named ``local`` in the config, as the README's config shows."""
    import os
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "agent"))
    from scripted_llm import ScriptedLLM, say

    monkeypatch.chdir(tmp_path)
    home = Path(os.environ["HERMES_HOME"])
    with ScriptedLLM([say("a.py: 2 TODOs"), say("Written."), say("the one in a.py")]) as llm:
        (home / "config.toml").write_text(f'[models.local]\nbase_url = "{llm.openai_url}"\nmodel = "m"\n')
        namespace: dict[str, Any] = {"__name__": "readme_agent"}
        exec(compile(block("from hermes_core.agent import"), "README.md", "exec"), namespace)
        assert namespace["result"].text == "a.py: 2 TODOs" and namespace["result"].stop_reason == "done"
        assert len(llm.requests) == 3  # two runs and the async one, one conversation
    sys.path.remove(str(ROOT / "tests" / "agent"))


def test_the_sandboxed_tool_example_runs(tmp_path: Path) -> None:
    from hermes_core import ToolSystem

    namespace: dict[str, Any] = {"__name__": "readme_sandbox"}
    exec(compile(block("def check_json("), "README.md", "exec"), namespace)
    (tmp_path / "good.json").write_text('{"a": 1}')
    (tmp_path / "bad.json").write_text('{"a": }')
    schema = {
        "name": "check_json",
        "description": "Check that a JSON file parses.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
    with ToolSystem.load(plugins_dir=False, load_entry_points=False, workspace=tmp_path) as system:
        system.registry.register("check_json", "json", schema, namespace["check_json"])
        good = system.call("check_json", {"path": "good.json"})
        bad = system.call("check_json", {"path": "bad.json"})
    assert '"a": 1' in good and good.endswith("[exit code 0]")
    assert "Expecting value" in bad and bad.endswith("[exit code 1]")


def test_the_environment_example_runs(tmp_path: Path) -> None:
    from hermes_core import ToolSystem

    namespace: dict[str, Any] = {"__name__": "readme_environment"}
    exec(compile(block("def build("), "README.md", "exec"), namespace)
    (tmp_path / "Makefile").write_text("hello:\n\t@echo built in $$PWD\n")
    schema = {
        "name": "build",
        "description": "Build a make target.",
        "parameters": {
            "type": "object",
            "properties": {"target": {"type": "string"}},
            "required": ["target"],
        },
    }
    with ToolSystem.load(plugins_dir=False, load_entry_points=False, workspace=tmp_path) as system:
        system.registry.register("build", "build", schema, namespace["build"])
        out = system.call("build", {"target": "hello"})
    assert out == f"built in {tmp_path.resolve()}\n\n[exit code 0]"
    assert (tmp_path / "build.log").read_text() == f"built in {tmp_path.resolve()}\n"


def test_the_tool_search_example_runs(tmp_path: Path) -> None:
    namespace: dict[str, Any] = {"__name__": "readme_search"}
    exec(compile(block("system.search_tools("), "README.md", "exec"), namespace)
    names = [m.name for m in namespace["found"].matches]
    assert names[0] == "cronjob"
    sent_before = {t["function"]["name"] for t in namespace["before"]}
    sent_after = {t["function"]["name"] for t in namespace["after"]}
    assert "tool_search" in sent_before and "cronjob" not in sent_before and "cronjob" in sent_after
