"""``image_generate``: text to image with an OpenAI-compatible images API or fal.ai, saved under the data dir.

Configuration (``[plugins.images]``)::

    provider = "openai"                     # or "fal"
    api_key = { env = "OPENAI_API_KEY" }    # fal: { env = "FAL_KEY" }
    model = "gpt-image-1"                   # fal: "fal-ai/flux/schnell"
    base_url = "https://api.openai.com/v1"  # any OpenAI-compatible server; fal: "https://fal.run"
    timeout = 120                           # seconds for the generation request
    max_download_mb = 25                    # per image fetched from a provider URL
    download_timeout = 120                  # seconds for one such download, all in
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_core import CallContext, ToolError, ToolRegistry, Unavailable

from ._media import describe, save_media, sniff
from ._remote import Service, download, field
from ._settings import as_float, as_text, require, section

if TYPE_CHECKING:
    from hermes_core import ToolSystem

TOOLSET = "media"
SECTION = "images"
PROVIDERS: dict[str, tuple[str, str]] = {  # provider -> (default base URL, default model)
    "openai": ("https://api.openai.com/v1", "gpt-image-1"),
    "fal": ("https://fal.run", "fal-ai/flux/schnell"),
}
ENABLE = (
    'set [plugins.images] api_key = {env = "OPENAI_API_KEY"} in the hermes config '
    '(or provider = "fal" with api_key = {env = "FAL_KEY"})'
)
SHAPES = ("square", "landscape", "portrait")
_OPENAI_SIZES = {"square": "1024x1024", "landscape": "1536x1024", "portrait": "1024x1536"}
_DALLE3_SIZES = {"square": "1024x1024", "landscape": "1792x1024", "portrait": "1024x1792"}
_FAL_SIZES = {"square": "square_hd", "landscape": "landscape_16_9", "portrait": "portrait_16_9"}

SCHEMA: dict[str, Any] = {
    "name": "image_generate",
    "description": (
        "Generate images from a text prompt and save them as files. Returns JSON: 'message' (names the saved "
        "paths) and 'files' (path, mime_type, bytes) that the host can attach or show. Describe subject, "
        "style, composition and lighting in the prompt."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "minLength": 1, "maxLength": 4000, "description": "What to draw."},
            "aspect_ratio": {"type": "string", "enum": list(SHAPES), "description": "Default square."},
            "count": {
                "type": "integer",
                "minimum": 1,
                "maximum": 4,
                "description": "Images to make (default 1).",
            },
        },
        "required": ["prompt"],
        "additionalProperties": False,
    },
}


def check(system: ToolSystem) -> tuple[bool, str] | Unavailable:
    cfg = section(system, SECTION)
    provider = as_text(cfg, "provider", "openai")
    if provider not in PROVIDERS:
        return (
            False,
            f"[plugins.images] provider {provider!r} is not supported; use one of {', '.join(PROVIDERS)}",
        )
    if as_text(cfg, "api_key") is None:
        return Unavailable(f"no image provider API key: {ENABLE}", by_design=True)  # opt-in: not a problem
    return True, ""


def _openai_detail(body: Any) -> str | None:
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error.get("code") or "")
    return str(error) if error else None


def _fal_detail(body: Any) -> str | None:
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, list):
        return "; ".join(str(d.get("msg", d)) if isinstance(d, dict) else str(d) for d in detail)
    return str(detail) if detail else None


def _service(cfg: dict[str, Any], provider: str) -> Service:
    key = require(cfg, "api_key", ENABLE)
    base, _ = PROVIDERS[provider]
    auth = f"Bearer {key}" if provider == "openai" else f"Key {key}"
    return Service(
        "the OpenAI images API" if provider == "openai" else "fal.ai",
        as_text(cfg, "base_url", base) or base,
        headers={"Authorization": auth},
        secrets=[key],
        auth_hint="Check [plugins.images] api_key.",
        timeout=as_float(cfg, "timeout", 120.0, 5.0, 600.0),
        detail=_openai_detail if provider == "openai" else _fal_detail,
    )


def _download_timeout(cfg: dict[str, Any]) -> float:
    return as_float(cfg, "download_timeout", 120.0, 0.5, 1800.0)


def _image(data: bytes, who: str) -> tuple[bytes, str, str]:
    kind = sniff(data)
    if kind is None or not kind[0].startswith("image/"):
        raise ToolError(f"{who} returned something that is not an image ({len(data)} bytes)")
    return data, kind[0], kind[1]


def _decode(b64: str, who: str) -> bytes:
    import base64
    import binascii

    try:
        return base64.b64decode(b64, validate=True)
    except (binascii.Error, ValueError):
        raise ToolError(f"{who} sent a malformed reply: an image's base64 data does not decode") from None


def _fetch(context: CallContext, url: str, who: str, max_bytes: int, timeout: float) -> bytes:
    if url.startswith("data:"):  # fal's sync mode inlines images as data URIs
        _, _, payload = url.partition(",")
        return _decode(payload, who)
    data, _ = download(context, url, what="generated image", max_bytes=max_bytes, timeout=timeout)
    return data


def _openai(
    context: CallContext,
    api: Service,
    cfg: dict[str, Any],
    prompt: str,
    shape: str,
    count: int,
    max_bytes: int,
) -> tuple[list[bytes], list[str]]:
    model = as_text(cfg, "model", PROVIDERS["openai"][1]) or PROVIDERS["openai"][1]
    body: dict[str, Any] = {"model": model, "prompt": prompt}
    if model.startswith("dall-e"):
        body["response_format"] = "b64_json"
        body["size"] = _DALLE3_SIZES[shape] if model == "dall-e-3" else "1024x1024"
    else:
        body["size"] = _OPENAI_SIZES[shape]
    # dall-e-3 makes one image per request
    rounds, per_round = (count, 1) if model == "dall-e-3" else (1, count)
    images: list[bytes] = []
    revised: list[str] = []
    for _ in range(rounds):
        reply = api.call(
            context, "POST", "images/generations", what="generating an image", json={**body, "n": per_round}
        )
        data = field(reply, "data", list, api.name, "generating an image")
        if not data:
            raise ToolError(f"{api.name} returned no image (empty 'data')")
        for item in data:
            if not isinstance(item, dict):
                raise ToolError(f"{api.name} sent a malformed reply: an entry of 'data' is not an object")
            if isinstance(item.get("b64_json"), str):
                images.append(_decode(item["b64_json"], api.name))
            elif isinstance(item.get("url"), str):
                images.append(_fetch(context, item["url"], api.name, max_bytes, _download_timeout(cfg)))
            else:
                raise ToolError(f"{api.name} sent a malformed reply: an image has neither b64_json nor url")
            if isinstance(item.get("revised_prompt"), str):
                revised.append(item["revised_prompt"])
    return images, revised


def _fal(
    context: CallContext,
    api: Service,
    cfg: dict[str, Any],
    prompt: str,
    shape: str,
    count: int,
    max_bytes: int,
) -> list[bytes]:
    model = as_text(cfg, "model", PROVIDERS["fal"][1]) or PROVIDERS["fal"][1]
    reply = api.call(
        context,
        "POST",
        model,
        what="generating an image",
        json={"prompt": prompt, "image_size": _FAL_SIZES[shape], "num_images": count},
    )
    items = field(reply, "images", list, api.name, "generating an image")
    if not items:
        raise ToolError(f"{api.name} returned no image (empty 'images')")
    out = []
    for item in items:
        url = field(item, "url", str, api.name, "generating an image")
        out.append(_fetch(context, url, api.name, max_bytes, _download_timeout(cfg)))
    return out


def image_generate(prompt: str, aspect_ratio: str = "square", count: int = 1, *, context: CallContext) -> str:
    """Generate ``count`` images for ``prompt`` and save them under ``<data dir>/media/images``."""
    cfg = section(context, SECTION)
    provider = as_text(cfg, "provider", "openai") or "openai"
    if provider not in PROVIDERS:
        raise ToolError(f"[plugins.images] provider {provider!r} is not supported", retryable=False)
    if not prompt.strip():
        raise ToolError("'prompt' is empty; describe the image to make")
    api = _service(cfg, provider)
    max_bytes = int(as_float(cfg, "max_download_mb", 25.0, 1.0, 500.0) * 1_000_000)
    revised: list[str] = []
    if provider == "openai":
        raw, revised = _openai(context, api, cfg, prompt, aspect_ratio, count, max_bytes)
    else:
        raw = _fal(context, api, cfg, prompt, aspect_ratio, count, max_bytes)
    files = []
    for data in raw:
        data, mime, ext = _image(data, api.name)
        files.append((save_media(context, "images", data, ext, "image"), mime))
    paths = ", ".join(str(p) for p, _ in files)
    noun = "image" if len(files) == 1 else f"{len(files)} images"
    extra: dict[str, Any] = {"provider": provider}
    if revised:
        extra["revised_prompt"] = revised[0] if len(revised) == 1 else revised
    return describe(f"Generated {noun}, saved to {paths}", files, **extra)


def register(registry: ToolRegistry) -> None:
    registry.register(
        name="image_generate",
        toolset=TOOLSET,
        schema=SCHEMA,
        handler=image_generate,
        check_fn=check,
        emoji="🎨",
        timeout=300.0,
    )
