"""A call's result as provider content parts: the text the model reads plus its images, where the provider takes them.

``system.call()`` returns text only. A host whose model can look at images uses ``call_outcome()`` and turns the
outcome into content parts with ``content_blocks(outcome, provider)``:

- ``anthropic``: ``[{"type": "text", ...}, {"type": "image", "source": {"type": "base64", ...}}]``, the content of
  a ``tool_result`` block (the Messages API accepts images there: JPEG, PNG, GIF and WebP).
- ``openai``: ``[{"type": "text", ...}, {"type": "image_url", "image_url": {"url": "data:..."}}]``. Chat
  Completions takes only text in a ``tool`` message, so send the text there and these parts in a ``user``
  message right after it.
- anything else (``text``): one text part.

Attachments a provider cannot take (audio, other files, image types it refuses) are named in a short text part, so
the model knows they exist; the host still has them on ``outcome.attachments``.
"""

from __future__ import annotations

import base64
from typing import Any

from .decisions import Attachment, CallOutcome

__all__ = ["IMAGE_TYPES", "content_blocks", "describe_attachment"]

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""Image types both providers accept inline."""


def describe_attachment(attachment: Attachment) -> str:
    """One line naming an attachment for a model that cannot see it."""
    name = f" {attachment.name}" if attachment.name else ""
    return f"[{attachment.kind}{name}: {len(attachment.data)} bytes, {attachment.mime_type}]"


def _image_part(attachment: Attachment, provider: str) -> dict[str, Any]:
    data = base64.b64encode(attachment.data).decode("ascii")
    if provider == "anthropic":
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": attachment.mime_type, "data": data},
        }
    return {"type": "image_url", "image_url": {"url": f"data:{attachment.mime_type};base64,{data}"}}


def content_blocks(outcome: CallOutcome, provider: str = "anthropic") -> list[dict[str, Any]]:
    """The outcome as a list of content parts for ``provider`` ("anthropic", "openai" or "text")."""
    parts: list[dict[str, Any]] = []
    if outcome.result:
        parts.append({"type": "text", "text": outcome.result})
    unseen: list[str] = []
    for attachment in outcome.attachments:
        if provider in ("anthropic", "openai") and attachment.mime_type in IMAGE_TYPES:
            parts.append(_image_part(attachment, provider))
        else:
            unseen.append(describe_attachment(attachment))
    if unseen:
        parts.append({"type": "text", "text": "\n".join(unseen)})
    return parts or [{"type": "text", "text": ""}]
