"""An MCP tool result as what the host gets: text for the model, images and files as attachments.

Text parts are kept in order. Images and audio become ``Attachment``s (and a one-line mention in the text, so a
model without image support still knows they exist). An embedded resource with text is inlined; a blob whose
type is textual (``text/*``, JSON, XML, YAML...) and that decodes as UTF-8 is inlined as text too; any other blob
is an attachment. A resource link is named. With no content at all, the structured content is the text.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING, Any

from ..decisions import Attachment, ToolOutput

if TYPE_CHECKING:
    from mcp.types import CallToolResult

__all__ = ["MAX_ATTACHMENT_BYTES", "is_textual", "render_result"]

MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024
"""Attachments of one result beyond this many bytes (decoded) are dropped and named in the text instead."""

_TEXT_TYPES = ("application/json", "application/xml", "application/yaml", "application/x-yaml",
               "application/javascript", "application/toml", "application/x-sh", "application/sql")  # fmt: skip


def is_textual(mime_type: str | None) -> bool:
    """True for MIME types whose content is text (``text/*``, JSON, XML, YAML, ``+json``/``+xml`` types)."""
    if not mime_type:
        return False
    base = mime_type.split(";", 1)[0].strip().lower()
    return base.startswith("text/") or base in _TEXT_TYPES or base.endswith(("+json", "+xml"))


def _decode(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return None


def render_result(result: CallToolResult) -> str | ToolOutput:
    """The text the model sees, plus attachments when the result carries images, audio or binary blobs."""
    from mcp.types import (
        AudioContent,
        BlobResourceContents,
        EmbeddedResource,
        ImageContent,
        ResourceLink,
        TextContent,
    )

    parts: list[str] = []
    attachments: list[Attachment] = []
    budget = MAX_ATTACHMENT_BYTES

    def attach(data: str, mime: str, kind: Any, name: str | None) -> None:
        nonlocal budget
        raw = _decode(data)
        label = f"{kind}{' ' + name if name else ''}"
        if raw is None:
            parts.append(f"[{label}: undecodable base64 data, {mime}]")
            return
        if len(raw) > budget:
            parts.append(f"[{label}: {len(raw)} bytes, {mime}; too large to pass on]")
            return
        budget -= len(raw)
        attachments.append(Attachment(mime_type=mime, data=raw, kind=kind, name=name))
        parts.append(f"[{label}: {len(raw)} bytes, {mime}; attached]")

    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ImageContent):
            attach(block.data, block.mime_type, "image", None)
        elif isinstance(block, AudioContent):
            attach(block.data, block.mime_type, "audio", None)
        elif isinstance(block, EmbeddedResource):
            res = block.resource
            if isinstance(res, BlobResourceContents):
                raw = _decode(res.blob) if is_textual(res.mime_type) else None
                text = None
                if raw is not None:
                    try:
                        text = raw.decode("utf-8")
                    except UnicodeDecodeError:
                        text = None
                if text is not None:
                    parts.append(text)
                else:
                    mime = res.mime_type or "application/octet-stream"
                    kind = (
                        "image"
                        if mime.startswith("image/")
                        else "audio"
                        if mime.startswith("audio/")
                        else "binary"
                    )
                    attach(res.blob, mime, kind, str(res.uri))
            else:
                parts.append(res.text)
        elif isinstance(block, ResourceLink):
            parts.append(f"[resource link: {block.uri}]")
        else:
            parts.append(f"[{getattr(block, 'type', type(block).__name__)} content]")
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False, default=str)
    text = "\n".join(parts)
    return ToolOutput(text, tuple(attachments)) if attachments else text
