"""Helpers for the web, vision and browser tests: a second loopback server, small real PDFs and PNGs."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

import pytest
from pytest_httpserver import HTTPServer

# Loopback is refused by default; the tests that need to reach their local server allow it explicitly.
ALLOW_LOOPBACK = {"allow_networks": ["127.0.0.1/32"]}
# The redirect tests allow only 127.0.0.2, so a hop to 127.0.0.1 (the "internal" server) must be refused.
ALLOW_SECOND = {"allow_networks": ["127.0.0.2/32"]}


@pytest.fixture
def second_server() -> Iterator[HTTPServer]:
    """A server on 127.0.0.2 (the whole of 127/8 is loopback on Linux)."""
    server = HTTPServer(host="127.0.0.2", port=0)
    server.start()
    yield server
    server.clear()
    server.stop()


def _pdf_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(pages: list[str], title: str | None = None) -> bytes:
    """A valid PDF with one line of Helvetica text per page (and an Info title), offsets computed for real."""
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{' '.join(f'{4 + 2 * i} 0 R' for i in range(len(pages)))}] "
        f"/Count {len(pages)} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, text in enumerate(pages):
        stream = f"BT /F1 18 Tf 72 720 Td ({_pdf_text(text)}) Tj ET".encode()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            f"/Contents {5 + 2 * i} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    info = ""
    if title is not None:
        objects.append(f"<< /Title ({_pdf_text(title)}) >>".encode())
        info = f" /Info {len(objects)} 0 R"
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R{info} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


def make_png(width: int = 2, height: int = 2, rgb: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A real RGB PNG of one colour."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" + bytes(rgb) * width
    raw = zlib.compress(row * height)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")
