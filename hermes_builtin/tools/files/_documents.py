"""``read_file`` of documents: Jupyter notebooks (cells and outputs), Word ``.docx`` (headings, paragraphs,
tables), Excel ``.xlsx`` (each sheet as a table) and PDF (text by page), rendered as text and paged by line like
any file.

pypdf comes with hermes-tools; python-docx and openpyxl are the ``documents`` extra
(``pip install 'hermes-tools[documents]'``), and without them the result says what to install. The document is
read from the file the path guard checked (the open file, never the path again). Office files are zip archives:
one that would unpack to more than ``MAX_UNPACKED`` bytes, or at a suspicious ratio, is refused before parsing.
A rendering is kept per session while the file is unchanged, so paging does not parse it again.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from hermes_core import CallContext, ToolError

__all__ = ["document_kind", "read_document"]

KINDS = {".ipynb": "notebook", ".docx": "docx", ".xlsx": "xlsx", ".xlsm": "xlsx", ".pdf": "pdf"}
MAX_UNPACKED = 256 * 1024 * 1024
MAX_RATIO = 200
MAX_PDF_PAGES = 500
MAX_SHEET_ROWS = 10_000
MAX_OUTPUT_CHARS = 5_000
MAX_LINE_CHARS = 2_000
MAX_PAGE_CHARS = 100_000
_CACHE_KEY = "files.documents"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_EXTRA = "pip install 'hermes-tools[documents]'"


def document_kind(path: Path) -> str | None:
    """``notebook``, ``docx``, ``xlsx`` or ``pdf`` for a file read_file renders (by its name), else None."""
    return KINDS.get(path.suffix.lower())


class _Cache:
    def __init__(self) -> None:
        self.items: OrderedDict[tuple[str, int, int], tuple[str, str]] = OrderedDict()
        self.lock = threading.Lock()


def read_document(
    context: CallContext, kind: str, raw: BinaryIO, path: Path, shown: str, offset: int, limit: int
) -> str:
    """A numbered page of the text rendering of the document open as ``raw``."""
    st = os.fstat(raw.fileno())
    key = (str(path), st.st_mtime_ns, st.st_size)
    try:
        cache: _Cache = context.session.stash(_CACHE_KEY, _Cache)
    except RuntimeError:  # the session is closing: render without keeping it
        cache = _Cache()
    with cache.lock:
        hit = cache.items.get(key)
    if hit is None:
        text, note = _render(kind, raw, shown)
        with cache.lock:
            cache.items[key] = (text, note)
            while len(cache.items) > 4:
                cache.items.popitem(last=False)
    else:
        text, note = hit
    return _page(text.splitlines(), shown, offset, limit, note)


def _page(lines: list[str], shown: str, offset: int, limit: int, note: str) -> str:
    total = len(lines)
    if not total:
        return f"({shown} has no text) [{note}]"
    if offset > total:
        raise ToolError(f"offset {offset} is past the end of {shown} ({total} lines of text)")
    page: list[str] = []
    chars = 0
    for number in range(offset, min(total, offset + limit - 1) + 1):
        text = lines[number - 1]
        if len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + f" ...[line truncated, {len(text)} characters]"
        entry = f"{number:6d}|{text}"
        if page and chars + len(entry) > MAX_PAGE_CHARS:
            break
        page.append(entry)
        chars += len(entry) + 1
    last = offset + len(page) - 1
    footer = f"[{shown}: lines {offset}-{last} of {total}"
    if last < total:
        footer += f"; next page: offset={last + 1}"
    return "\n".join([*page, footer + "]", f"[{note}]"])


def _render(kind: str, raw: BinaryIO, shown: str) -> tuple[str, str]:
    renderers = {"notebook": _notebook, "docx": _docx, "xlsx": _xlsx, "pdf": _pdf}
    try:
        return renderers[kind](raw, shown)
    except ToolError:
        raise
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, OSError) as err:
        what = {"notebook": "Jupyter notebook", "docx": "Word document", "xlsx": "Excel workbook"}.get(
            kind, "PDF"
        )
        raise ToolError(f"{shown} is not a readable {what} ({type(err).__name__}: {err})") from None


# -- notebooks -------------------------------------------------------------------------------------------


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _cut(text: str) -> str:
    text = _ANSI.sub("", text).rstrip("\n")
    if len(text) > MAX_OUTPUT_CHARS:
        return text[:MAX_OUTPUT_CHARS] + f"\n...[output cut at {MAX_OUTPUT_CHARS} characters]"
    return text


def _outputs(outputs: Iterable[Any]) -> Iterator[str]:
    for out in outputs:
        if not isinstance(out, dict):
            continue
        kind = out.get("output_type")
        if kind == "stream":
            yield _cut(_text(out.get("text")))
        elif kind == "error":
            trace = _text("\n".join(out.get("traceback") or [])) or f"{out.get('ename')}: {out.get('evalue')}"
            yield _cut(trace)
        elif kind in ("execute_result", "display_data"):
            data = out.get("data") or {}
            if "text/plain" in data:
                yield _cut(_text(data["text/plain"]))
            shown = [mime for mime in data if mime != "text/plain"]
            if shown:
                yield f"[{', '.join(shown)} output not shown]"


def _notebook(raw: BinaryIO, shown: str) -> tuple[str, str]:
    notebook = json.loads(raw.read().decode("utf-8-sig"))
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise ValueError("no 'cells' list")
    meta = notebook.get("metadata") or {}
    language = (meta.get("kernelspec") or {}).get("language") or (meta.get("language_info") or {}).get("name")
    fence = str(language or "")
    parts: list[str] = []
    for number, cell in enumerate(notebook["cells"], 1):
        if not isinstance(cell, dict):
            continue
        kind = cell.get("cell_type", "code")
        source = _text(cell.get("source")).rstrip("\n")
        if kind == "code":
            count = cell.get("execution_count")
            head = f"## [{number}] code" + (f" (In [{count}])" if count is not None else "")
            parts.append(f"{head}\n```{fence}\n{source}\n```")
            outputs = list(_outputs(cell.get("outputs") or []))
            if outputs:
                parts.append("Output:\n" + "\n".join(outputs))
        else:
            parts.append(f"## [{number}] {kind}\n{source}")
    cells = len(notebook["cells"])
    return "\n\n".join(parts), f"Jupyter notebook rendered as text: {cells} cells, outputs included"


# -- office files ------------------------------------------------------------------------------------------


def _check_zip(raw: BinaryIO, shown: str) -> None:
    import zipfile

    try:
        with zipfile.ZipFile(raw) as archive:
            members = archive.infolist()
    except zipfile.BadZipFile as err:
        raise ToolError(f"{shown} is not a readable Office file (not a zip archive: {err})") from None
    unpacked = sum(m.file_size for m in members)
    packed = sum(m.compress_size for m in members) or 1
    if unpacked > MAX_UNPACKED or unpacked / packed > MAX_RATIO:
        raise ToolError(
            f"{shown} would unpack to {unpacked:,} bytes ({unpacked / packed:.0f}x its size); refused as a "
            "possible zip bomb"
        )
    raw.seek(0)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if hasattr(value, "isoformat"):
        value = value.isoformat()
    return " ".join(str(value).split()).replace("|", "\\|")


def _table(rows: Iterable[Iterable[Any]]) -> list[str]:
    out = []
    for i, row in enumerate(rows):
        cells = [_cell(v) for v in row]
        out.append("| " + " | ".join(cells) + " |")
        if i == 0:
            out.append("|" + "---|" * len(cells))
    return out


def _docx(raw: BinaryIO, shown: str) -> tuple[str, str]:
    try:
        import docx
    except ImportError:
        raise ToolError(f"reading .docx files needs python-docx: {_EXTRA}", retryable=False) from None
    from docx.table import Table

    _check_zip(raw, shown)
    document = docx.Document(raw)
    lines: list[str] = []
    tables = 0
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            tables += 1
            lines.extend(["", *_table([cell.text for cell in row.cells] for row in block.rows), ""])
            continue
        text = block.text.strip()
        style = (block.style.name if block.style is not None else "") or ""
        if not text:
            continue
        if style == "Title":
            lines.append(f"# {text}")
        elif style.startswith("Heading ") and style[8:].isdigit():
            lines.append(f"{'#' * min(6, int(style[8:]) + 1)} {text}")
        elif style.startswith("List"):
            lines.append(f"- {text}")
        else:
            lines.append(text)
    return "\n".join(lines).strip(), f"Word document rendered as text: {tables} tables"


def _xlsx(raw: BinaryIO, shown: str) -> tuple[str, str]:
    try:
        import openpyxl
    except ImportError:
        raise ToolError(f"reading .xlsx files needs openpyxl: {_EXTRA}", retryable=False) from None

    _check_zip(raw, shown)
    workbook = openpyxl.load_workbook(raw, read_only=True, data_only=True)
    parts: list[str] = []
    try:
        for sheet in workbook.worksheets:
            rows: list[list[Any]] = []
            more = False
            for row in sheet.iter_rows(values_only=True):
                if len(rows) >= MAX_SHEET_ROWS:
                    more = True
                    break
                rows.append(list(row))
            while rows and all(v is None for v in rows[-1]):
                rows.pop()
            width = max(
                (max((i + 1 for i, v in enumerate(r) if v is not None), default=0) for r in rows), default=0
            )
            table = _table(r[:width] + [None] * (width - len(r[:width])) for r in rows) if width else []
            head = f"## Sheet: {sheet.title} ({len(rows)} rows x {width} columns)"
            tail = [f"(only the first {MAX_SHEET_ROWS} rows are shown)"] if more else []
            parts.append("\n".join([head, *(table or ["(empty)"]), *tail]))
    finally:
        workbook.close()
    return "\n\n".join(parts), f"Excel workbook rendered as text: {len(parts)} sheets, values as last saved"


# -- PDF ---------------------------------------------------------------------------------------------------


def _pdf(raw: BinaryIO, shown: str) -> tuple[str, str]:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(raw)
        if reader.is_encrypted and not reader.decrypt(""):
            raise ToolError(f"{shown} is an encrypted PDF; it cannot be read without its password")
        total = len(reader.pages)
        parts = []
        for number, page in enumerate(reader.pages[:MAX_PDF_PAGES], 1):
            text = (page.extract_text() or "").strip()
            parts.append(f"## Page {number}\n\n{text or '(no text on this page)'}")
    except PdfReadError as err:
        raise ToolError(f"{shown} is not a readable PDF ({err})") from None
    note = f"PDF rendered as text: {total} pages"
    if total > MAX_PDF_PAGES:
        note += f", the first {MAX_PDF_PAGES} shown"
    return "\n\n".join(parts), note
