"""``read_file`` renders notebooks (cells and outputs), ``.docx``, ``.xlsx`` (sheets as tables) and PDF (text by
page) as text, paged by line like any file; a missing optional library is explained; zip bombs are refused."""

from __future__ import annotations

import json
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from web_support import make_pdf

from hermes_core import ToolSystem

MakeSystem = Callable[..., ToolSystem]


def _notebook(path: Path) -> None:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Analysis\n", "Loads the data."]},
        {
            "cell_type": "code",
            "execution_count": 3,
            "metadata": {},
            "source": "print('hello')\n1 + 1",
            "outputs": [
                {"output_type": "stream", "name": "stdout", "text": ["hello\n"]},
                {"output_type": "execute_result", "execution_count": 3, "data": {"text/plain": ["2"]}},
                {
                    "output_type": "display_data",
                    "data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"},
                },
            ],
        },
        {
            "cell_type": "code",
            "execution_count": 4,
            "metadata": {},
            "source": "1 / 0",
            "outputs": [
                {
                    "output_type": "error",
                    "ename": "ZeroDivisionError",
                    "evalue": "division by zero",
                    "traceback": ["\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"],
                },
            ],
        },
    ]
    meta = {"kernelspec": {"name": "python3", "language": "python"}}
    path.write_text(json.dumps({"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}))


def test_a_notebook_comes_back_with_cells_and_outputs(
    make_builtin_system: MakeSystem, workspace: Path
) -> None:
    _notebook(workspace / "analysis.ipynb")
    out = make_builtin_system().call("read_file", {"path": "analysis.ipynb"})
    assert "     1|## [1] markdown\n     2|# Analysis\n     3|Loads the data." in out
    for expected in ("## [2] code (In [3])", "```python", "print('hello')", "hello", "<Figure>"):
        assert expected in out, (expected, out)
    assert "[image/png output not shown]" in out
    assert "ZeroDivisionError: division by zero" in out and "\x1b" not in out
    assert "Jupyter notebook rendered as text: 3 cells" in out


def test_a_docx_comes_back_with_headings_paragraphs_and_tables(
    make_builtin_system: MakeSystem, workspace: Path
) -> None:
    import docx

    document = docx.Document()
    document.add_heading("Quarterly report", level=1)
    document.add_paragraph("Revenue grew in every region.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Region", "Growth"
    table.cell(1, 0).text, table.cell(1, 1).text = "North", "12%"
    document.add_paragraph("Next steps follow.", style="List Bullet")
    document.save(str(workspace / "report.docx"))
    out = make_builtin_system().call("read_file", {"path": "report.docx"})
    assert "|## Quarterly report" in out and "|Revenue grew in every region." in out
    assert "|| Region | Growth |" in out and "|| North | 12% |" in out
    assert "|- Next steps follow." in out and "Word document rendered as text: 1 tables" in out


def test_an_xlsx_comes_back_sheet_by_sheet_and_pages(
    make_builtin_system: MakeSystem, workspace: Path
) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    sales = book.active
    sales.title = "Sales"
    sales.append(["Region", "Q1", "Q2"])
    for i in range(300):
        sales.append([f"R{i}", i, i * 1.5])
    staff = book.create_sheet("Staff")
    staff.append(["Name", "Role"])
    staff.append(["Ada", "Engineer | lead"])
    book.save(workspace / "book.xlsx")
    system = make_builtin_system()
    first = system.call("read_file", {"path": "book.xlsx", "limit": 50})
    assert "## Sheet: Sales (301 rows x 3 columns)" in first and "| Region | Q1 | Q2 |" in first
    assert "| R0 | 0 | 0 |" in first and "| R1 | 1 | 1.5 |" in first
    assert "next page: offset=51" in first and "Excel workbook rendered as text: 2 sheets" in first
    rest = system.call("read_file", {"path": "book.xlsx", "offset": 290, "limit": 100})
    assert "## Sheet: Staff (2 rows x 2 columns)" in rest and "| Ada | Engineer \\| lead |" in rest
    assert "next page" not in rest


def test_a_pdf_comes_back_page_by_page(make_builtin_system: MakeSystem, workspace: Path) -> None:
    (workspace / "paper.pdf").write_bytes(make_pdf(["Hello from page one", "And page two"], title="Paper"))
    out = make_builtin_system().call("read_file", {"path": "paper.pdf"})
    assert "## Page 1" in out and "Hello from page one" in out
    assert "## Page 2" in out and "And page two" in out and "PDF rendered as text: 2 pages" in out
    (workspace / "broken.pdf").write_bytes(b"%PDF-1.4\n garbage")
    broken = make_builtin_system().call_outcome("read_file", {"path": "broken.pdf"})
    assert broken.status == "error" and "is not a readable PDF" in broken.result


def test_without_the_documents_extra_the_result_says_what_to_install(
    make_builtin_system: MakeSystem, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import docx

    docx.Document().save(str(workspace / "memo.docx"))
    monkeypatch.setitem(sys.modules, "docx", None)  # as if python-docx were not installed
    outcome = make_builtin_system().call_outcome("read_file", {"path": "memo.docx"})
    assert outcome.status == "error"
    assert "needs python-docx" in outcome.result and "hermes-tools[documents]" in outcome.result


def test_an_office_zip_bomb_is_refused(make_builtin_system: MakeSystem, workspace: Path) -> None:
    with zipfile.ZipFile(workspace / "bomb.xlsx", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("xl/worksheets/sheet1.xml", b"\0" * (20 * 1024 * 1024))
    outcome = make_builtin_system().call_outcome("read_file", {"path": "bomb.xlsx"})
    assert outcome.status == "error" and "possible zip bomb" in outcome.result


def test_a_rendering_is_reused_while_the_file_is_unchanged(
    make_builtin_system: MakeSystem, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes_builtin.tools.files import _documents

    _notebook(workspace / "nb.ipynb")
    calls: list[str] = []
    real = _documents._notebook
    monkeypatch.setattr(_documents, "_notebook", lambda raw, shown: calls.append(shown) or real(raw, shown))
    system = make_builtin_system()
    system.call("read_file", {"path": "nb.ipynb", "limit": 2})
    system.call("read_file", {"path": "nb.ipynb", "offset": 3})
    assert len(calls) == 1
    _notebook(workspace / "nb.ipynb")
    (workspace / "nb.ipynb").write_text((workspace / "nb.ipynb").read_text() + "\n")
    system.call("read_file", {"path": "nb.ipynb"})
    assert len(calls) == 2
