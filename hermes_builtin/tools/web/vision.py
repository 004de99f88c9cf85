"""The "vision" toolset: ``vision_analyze`` asks the ``[plugins.vision]`` model about an image.

The image is a file in the workspace (read through the path guard), an http(s) URL (fetched under the
``[plugins.web]`` network policy) or a ``data:`` URL. Hidden until a vision model is configured.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes_core import CallContext, ToolError, ToolRegistry, Unavailable

TOOLSET = "vision"
DEFAULT_QUESTION = "Describe this image in detail, including any text in it."

SCHEMA: dict[str, Any] = {
    "name": "vision_analyze",
    "description": (
        "Ask a vision model about an image: describe it, read its text, answer a question about it. "
        "image is a workspace file path, an http(s) URL or a data: URL (PNG, JPEG, GIF, WebP)."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "image": {"type": "string", "description": "Path or URL of the image."},
            "question": {"type": "string", "description": "What to find out (default: a description)."},
        },
        "required": ["image"],
        "additionalProperties": False,
    },
}


def _load(image: str, limit: int, context: CallContext) -> bytes:
    source = image.strip()
    if not source:
        raise ToolError("image is empty; give a file path or a URL")
    lowered = source.lower()
    if lowered.startswith("data:"):
        from ._vision import decode_data_url

        return decode_data_url(source, limit)
    if lowered.startswith(("http://", "https://")):
        from . import web
        from ._web_extract import download

        web_settings = web.settings_of(context)
        return download(web.fetch_client(context, web_settings), web_settings, source, limit).body
    if "://" in source:
        raise ToolError(f"unsupported image source {source!r}; use a file path, http(s) or data: URL")
    raw = Path(source).expanduser()
    path = Path(context.guard_path(raw if raw.is_absolute() else Path(context.workspace) / raw, "read"))
    try:
        size = path.stat().st_size
        if size > limit:
            raise ToolError(f"{source} is {size:,} bytes, over the {limit:,} byte limit", retryable=False)
        return path.read_bytes()
    except FileNotFoundError:
        raise ToolError(f"image file not found: {source}") from None
    except IsADirectoryError:
        raise ToolError(f"{source} is a directory, not an image") from None
    except OSError as err:
        raise ToolError(f"cannot read {source}: {err.strerror or err}") from None


def vision_analyze(image: str, question: str = DEFAULT_QUESTION, *, context: CallContext) -> str:
    """The vision model's answer about ``image`` (see ``SCHEMA``)."""
    from . import _vision, web
    from ._web_settings import SettingsError

    try:
        settings = _vision.settings_of(context)
        client = web.api_client(context, web.settings_of(context))
    except SettingsError as err:
        raise ToolError(str(err), retryable=False) from None
    data = _load(image, settings.max_image_bytes, context)
    return _vision.analyze(client, settings, data, question.strip() or DEFAULT_QUESTION)


def vision_available(system: Any) -> tuple[bool, str] | Unavailable:
    """Shown once ``[plugins.vision]`` names a model endpoint."""
    from ._vision import available

    return available(system)


def register(registry: ToolRegistry) -> None:
    """Register ``vision_analyze`` (toolset "vision")."""
    registry.register(
        name="vision_analyze",
        toolset=TOOLSET,
        schema=SCHEMA,
        handler=vision_analyze,
        check_fn=vision_available,
        emoji="👁️",
        max_result_size_chars=20_000,
        parallel_safe=True,
    )
