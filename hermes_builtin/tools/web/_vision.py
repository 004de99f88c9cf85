"""Asking an OpenAI-compatible vision model about images (``vision_analyze``, ``browser_vision``,
``video_analyze``).

``POST <base_url>/chat/completions`` with one user message holding the question and the images as base64
``data:`` URLs (a video's frames each after a caption with its time); the answer is ``choices[0].message.content``. Configured in ``[plugins.vision]``:

```toml
[plugins.vision]
base_url = "https://api.openai.com/v1"   # any OpenAI-compatible server (vLLM, Ollama, LiteLLM...)
api_key = { env = "OPENAI_API_KEY" }     # optional for servers without keys
model = "gpt-4o-mini"
max_tokens = 1000
timeout = 60
detail = "auto"                          # low | high | auto
```
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from hermes_core import ToolError, Unavailable

from ._http import ServiceError, call_json
from ._web_settings import SettingsError, _int, _number

if TYPE_CHECKING:
    import httpx

SECTION = "vision"
MAX_IMAGE_BYTES = 20_000_000
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


class VisionSettings(NamedTuple):
    base_url: str
    model: str
    api_key: str | None = None
    max_tokens: int = 1000
    timeout: float = 60.0
    detail: str = "auto"
    max_image_bytes: int = MAX_IMAGE_BYTES

    @classmethod
    def from_config(cls, section: Mapping[str, Any]) -> VisionSettings:
        """Parse ``[plugins.vision]``; ``SettingsError`` says what is missing or wrong."""
        base = section.get("base_url")
        model = section.get("model")
        if not base or not model:
            missing = " and ".join(k for k in ("base_url", "model") if not section.get(k))
            raise SettingsError(f"no vision model configured: set {missing} in [plugins.{SECTION}]")
        if not isinstance(base, str) or not base.startswith(("http://", "https://")):
            raise SettingsError(f"[plugins.{SECTION}] base_url must be an http(s) URL, got {base!r}")
        if not isinstance(model, str):
            raise SettingsError(f"[plugins.{SECTION}] model must be a string")
        key = section.get("api_key")
        if "api_key" in section and not (isinstance(key, str) and key.strip()):
            raise SettingsError(
                f"[plugins.{SECTION}] api_key is empty (an unset environment variable or missing file?)"
            )
        detail = section.get("detail", "auto")
        if detail not in ("auto", "low", "high"):
            raise SettingsError(f"[plugins.{SECTION}] detail must be auto, low or high, got {detail!r}")
        return cls(
            base_url=base.rstrip("/"),
            model=model,
            api_key=key.strip() if isinstance(key, str) else None,
            max_tokens=_int(section, SECTION, "max_tokens", 1000, 1),
            timeout=_number(section, SECTION, "timeout", 60.0),
            detail=detail,
            max_image_bytes=_int(section, SECTION, "max_image_bytes", MAX_IMAGE_BYTES, 1),
        )


def settings_of(source: Any) -> VisionSettings:
    return VisionSettings.from_config(source.plugin_config(SECTION))


def available(system: Any) -> tuple[bool, str] | Unavailable:
    try:
        settings_of(system)
    except SettingsError as err:
        if not system.plugin_config(SECTION):
            return Unavailable(str(err), by_design=True)  # no vision section at all: opt-in, not a problem
        return False, str(err)
    return True, ""


def image_type(data: bytes) -> str:
    """The MIME type of PNG, JPEG, GIF or WebP bytes; ``ToolError`` for anything else."""
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    raise ToolError("not a supported image: give a PNG, JPEG, GIF or WebP image", retryable=False)


def decode_data_url(url: str, limit: int) -> bytes:
    head, _, payload = url.partition(",")
    if not head.lower().endswith(";base64"):
        raise ToolError("a data: URL image must be base64-encoded (data:image/png;base64,...)")
    if len(payload) * 3 // 4 > limit:
        raise ToolError(f"the image is over the {limit:,} byte limit", retryable=False)
    import base64  # here, not at import: the check of every vision tool imports this module
    import binascii

    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise ToolError("the data: URL is not valid base64") from None


def _image_part(image: bytes, settings: VisionSettings) -> dict[str, Any]:
    import base64

    data_url = f"data:{image_type(image)};base64,{base64.b64encode(image).decode('ascii')}"
    return {"type": "image_url", "image_url": {"url": data_url, "detail": settings.detail}}


def analyze(client: httpx.Client, settings: VisionSettings, image: bytes, question: str) -> str:
    """The model's answer to ``question`` about ``image`` (bytes of a supported format)."""
    return ask(client, settings, [{"type": "text", "text": question}, _image_part(image, settings)])


def analyze_frames(
    client: httpx.Client, settings: VisionSettings, question: str, frames: list[tuple[str, bytes]]
) -> str:
    """The model's answer to ``question`` about several images, each after its caption (video frames)."""
    parts: list[dict[str, Any]] = [{"type": "text", "text": question}]
    for caption, image in frames:
        parts += [{"type": "text", "text": caption}, _image_part(image, settings)]
    return ask(client, settings, parts)


def ask(client: httpx.Client, settings: VisionSettings, content: list[dict[str, Any]]) -> str:
    """Send one user message made of ``content`` parts; the answer's text (``ServiceError`` when unusable)."""
    payload = {
        "model": settings.model,
        "messages": [{"role": "user", "content": content}],
        "max_tokens": settings.max_tokens,
    }
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
    service = f"vision model {settings.model!r}"
    body = call_json(
        client,
        service,
        "POST",
        settings.base_url + "/chat/completions",
        json=payload,
        headers=headers,
        timeout=settings.timeout,
    )
    try:
        choice = body["choices"][0]
        answer = choice["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise ServiceError(f"{service} sent a malformed answer: no choices[0].message.content") from None
    if isinstance(answer, list):  # some servers answer with content parts
        answer = "".join(p.get("text", "") for p in answer if isinstance(p, dict))
    if not isinstance(answer, str) or not answer.strip():
        reason = choice.get("finish_reason") if isinstance(choice, dict) else None
        raise ServiceError(f"{service} gave an empty answer (finish_reason={reason!r})")
    return answer.strip()
