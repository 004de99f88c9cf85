"""Tables on a terminal fit its width and never break a word: a wide one is a table whose free-text columns
wrap between words, a narrow one puts the free text on indented lines under each row."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_helpers import GREET, Run, write_plugin

from hermes_core.cli import _output
from hermes_core.cli._output import emit_table

ROWS = [
    [
        "browser_get_images",
        "browser",
        "builtin",
        "built-in",
        False,
        "no vision model configured: set base_url",
    ],
    ["search_files", "file", "builtin", "built-in", True, ""],
    ["send_message", "messaging", "builtin", "built-in", False, "no platform: set [plugins.messaging] token"],
]
HEADERS = ["name", "toolset", "plugin", "source", "available", "reason"]


def words_of(rows: list[list[object]]) -> set[str]:
    return {w for row in rows for cell in row for w in _output.plain_cell(cell).split()}


def assert_fits_and_keeps_words(text: str, width: int, rows: list[list[object]]) -> None:
    lines = text.splitlines()
    assert lines and max(len(line) for line in lines) <= width, text
    tokens = set(re.split(r"[\s│┃]+", text))
    broken = sorted(w for w in words_of(rows) if w not in tokens)
    assert broken == [], f"words broken across lines: {broken}\n{text}"


@pytest.mark.parametrize("width", [60, 80, 100, 140])
def test_tables_fit_the_terminal_without_breaking_words(
    width: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    emit_table(HEADERS, ROWS, title="3 tools", rich_output=True)
    assert_fits_and_keeps_words(capsys.readouterr().out, width, ROWS)


def test_a_wide_terminal_gets_a_table_a_narrow_one_rows_and_indented_text(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "140")
    emit_table(HEADERS, ROWS, rich_output=True)
    wide = capsys.readouterr().out
    assert "no vision model configured: set base_url" in wide  # the reason beside its row, on one line
    monkeypatch.setenv("COLUMNS", "70")
    emit_table(HEADERS, ROWS, rich_output=True)
    narrow = capsys.readouterr().out.splitlines()
    row = narrow.index(next(line for line in narrow if line.startswith("browser_get_images")))
    assert narrow[row + 1].startswith("    reason: no vision model")


def test_real_commands_fit_80_columns(greet_home: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    write_plugin(greet_home, "greet", GREET)
    monkeypatch.setenv("COLUMNS", "80")
    from hermes_core.cli import _plugins, _tools

    for module in (_output, _plugins, _tools):  # each imported it by name
        monkeypatch.setattr(module, "is_terminal", lambda: True)
    for args in (("tools", "list"), ("plugins", "list"), ("plugins", "doctor"), ("toolsets",)):
        text = run(*args).stdout
        lines = text.splitlines()
        assert lines and max(len(line) for line in lines) <= 80, (args, text)
