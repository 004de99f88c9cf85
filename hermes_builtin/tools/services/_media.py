"""Generated media files: recognise their type from their bytes, save them atomically under
``<data dir>/media/<kind>/`` and describe them in a result the host can attach (JSON with ``files[].path``)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from hermes_core import CallContext, ToolError, tool_result

__all__ = ["describe", "media_dir", "save_media", "sniff"]


def sniff(data: bytes) -> tuple[str, str] | None:
    """``(mime type, extension)`` of common image, audio and video files from their first bytes, else None."""
    head = data[:16]
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png", "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg", "jpg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif", "gif"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp", "webp"
    if head.startswith(b"RIFF") and head[8:12] == b"WAVE":
        return "audio/wav", "wav"
    if head.startswith(b"OggS"):
        return "audio/ogg", "ogg"
    if head.startswith(b"fLaC"):
        return "audio/flac", "flac"
    if head.startswith(b"ID3") or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0):
        return ("audio/aac", "aac") if head[1] & 0x06 == 0 else ("audio/mpeg", "mp3")
    if head[4:8] == b"ftyp":
        brand = head[8:12]
        if brand in (b"M4A ", b"M4B "):
            return "audio/mp4", "m4a"
        if brand == b"qt  ":
            return "video/quicktime", "mov"
        return "video/mp4", "mp4"
    if head.startswith(b"\x1aE\xdf\xa3"):
        return "video/webm", "webm"
    return None


def media_dir(context: CallContext, kind: str) -> Path:
    """``<data dir>/media/<kind>`` (images, audio, video)."""
    return context.data_dir / "media" / kind


def save_media(context: CallContext, kind: str, data: bytes, ext: str, stem: str) -> Path:
    """Write ``data`` atomically to a new, unique file under ``media_dir(kind)`` and return its path."""
    from hermes_core.fileio import atomic_write  # tempfile and friends load with the first file written

    if not data:
        raise ToolError(f"the provider returned an empty {kind} file")
    name = f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}-{os.urandom(4).hex()}.{ext}"
    path = media_dir(context, kind) / name
    atomic_write(path, data)
    return path


def describe(message: str, files: list[tuple[Path, str]], **extra: Any) -> str:
    """The result: JSON with ``message`` (which names every path) and ``files`` (path, mime type, bytes)."""
    listed = [{"path": str(path), "mime_type": mime, "bytes": path.stat().st_size} for path, mime in files]
    return tool_result(message=message, files=listed, **extra)
