"""``video_generate``: text to video with OpenAI's Videos API (Sora) or Luma Dream Machine, saved under the data dir.

The two providers take different options (Sora: ``seconds`` and ``size``; Luma: ``aspect_ratio``,
``resolution``, ``duration`` and ``loop``), so the schema the model sees is narrowed to the configured
provider's options by ``dynamic_schema_overrides``. Rendering is asynchronous at both: the tool starts a job and
polls it for up to ``wait_seconds``; a job still running then is returned with its id, and a later call with
``job_id`` picks it up.

Configuration (``[plugins.video]``)::

    provider = "openai"                      # or "luma"
    api_key = { env = "OPENAI_API_KEY" }     # luma: { env = "LUMAAI_API_KEY" }
    model = "sora-2"                         # luma: "ray-2"
    base_url = "https://api.openai.com/v1"   # luma: "https://api.lumalabs.ai/dream-machine/v1"
    wait_seconds = 240                       # how long one call waits for the render (0-600)
    poll_seconds = 5                         # pause between status checks
    max_download_mb = 200
    download_timeout = 300                   # seconds for fetching the finished clip
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

from hermes_core import CallContext, ToolError, ToolRegistry, Unavailable, tool_result

from ._media import describe, save_media, sniff
from ._remote import Service, download, field
from ._settings import as_float, as_text, require, section

if TYPE_CHECKING:
    from hermes_core import ToolSystem

TOOLSET = "media"
SECTION = "video"
ENABLE = (
    'set [plugins.video] api_key = {env = "OPENAI_API_KEY"} in the hermes config (OpenAI Sora, the default) '
    'or provider = "luma" with api_key = {env = "LUMAAI_API_KEY"}'
)
_JOB_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$")

# Each provider's own options, exactly as its API names and bounds them.
OPTIONS: dict[str, dict[str, dict[str, Any]]] = {
    "openai": {
        "seconds": {"type": "integer", "enum": [4, 8, 12]},
        "size": {"type": "string", "enum": ["720x1280", "1280x720", "1024x1792", "1792x1024"]},
    },
    "luma": {
        "aspect_ratio": {"type": "string", "enum": ["16:9", "9:16", "1:1", "4:3", "3:4", "21:9", "9:21"]},
        "resolution": {"type": "string", "enum": ["540p", "720p", "1080p", "4k"]},
        "duration": {"type": "string", "enum": ["5s", "9s"]},
        "loop": {"type": "boolean"},
    },
}
# What the narrowed schema says of them (the registered one, every provider's options at once, says nothing:
# it validates, the model is sent a narrowed one)
NOTES: dict[str, str] = {
    "seconds": "Default 4.",
    "size": "Width x height (default 720x1280, portrait).",
    "aspect_ratio": "Default 16:9.",
    "resolution": "Default 720p.",
    "duration": "Default 5s.",
}
DEFAULTS: dict[str, tuple[str, str]] = {  # provider -> (base URL, model)
    "openai": ("https://api.openai.com/v1", "sora-2"),
    "luma": ("https://api.lumalabs.ai/dream-machine/v1", "ray-2"),
}
_COMMON: dict[str, Any] = {
    "prompt": {
        "type": "string",
        "minLength": 1,
        "maxLength": 4000,
        "description": "Subject, action, camera, style.",
    },
    "job_id": {"type": "string"},
}
_DESCRIPTION = (
    "Generate a short video clip from a text prompt, saved as a file. Rendering takes minutes: the call waits, "
    "then returns the file or the job_id of a render still running; call again with job_id (no prompt) to "
    "collect it."
)


def _schema(provider: str | None) -> dict[str, Any]:
    if provider is None:
        options = {k: v for opts in OPTIONS.values() for k, v in opts.items()}
    else:
        options = {
            k: {**v, "description": NOTES[k]} if k in NOTES else v for k, v in OPTIONS[provider].items()
        }
    where = f" Provider: {provider}." if provider else ""
    return {
        "description": _DESCRIPTION + where,
        "parameters": {
            "type": "object",
            "properties": {**_COMMON, **options},
            "additionalProperties": False,
        },
    }


SCHEMA: dict[str, Any] = {"name": "video_generate", **_schema(None)}


def _provider(cfg: dict[str, Any]) -> str:
    return as_text(cfg, "provider", "openai") or "openai"


def _check(system: ToolSystem) -> tuple[bool, str] | Unavailable:
    cfg = section(system, SECTION)
    provider = _provider(cfg)
    if provider not in OPTIONS:
        return (
            False,
            f"[plugins.video] provider {provider!r} is not supported; use one of {', '.join(OPTIONS)}",
        )
    if as_text(cfg, "api_key") is None:
        return Unavailable(f"no video provider API key: {ENABLE}", by_design=True)  # opt-in
    return True, ""


def _overrides(available: frozenset[str], system: ToolSystem) -> dict[str, Any] | None:
    """Only the configured provider's options."""
    provider = _provider(section(system, SECTION))
    return _schema(provider) if provider in OPTIONS else None


def _detail(body: Any) -> str | None:
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    if isinstance(error, dict):
        return str(error.get("message") or error.get("code") or "")
    detail = body.get("detail")
    return str(detail) if detail else None


def _service(cfg: dict[str, Any], provider: str) -> Service:
    key = require(cfg, "api_key", ENABLE)
    base = as_text(cfg, "base_url", DEFAULTS[provider][0]) or DEFAULTS[provider][0]
    return Service(
        "the OpenAI Videos API" if provider == "openai" else "Luma Dream Machine",
        base,
        headers={"Authorization": f"Bearer {key}"},
        secrets=[key],
        auth_hint="Check [plugins.video] api_key.",
        timeout=as_float(cfg, "timeout", 60.0, 5.0, 300.0),
        detail=_detail,
    )


# -- the two providers: start a job, read its state, fetch its file ------------------------------------------


def _start(
    context: CallContext, api: Service, provider: str, model: str, prompt: str, opts: dict[str, Any]
) -> Any:
    if provider == "openai":
        form = {"model": model, "prompt": prompt, **{k: str(v) for k, v in opts.items()}}
        files = {k: (None, v) for k, v in form.items()}  # multipart/form-data fields, as the API documents
        return api.call(context, "POST", "videos", what="starting a video job", files=files)
    body = {"prompt": prompt, "model": model, **opts}
    return api.call(context, "POST", "generations/video", what="starting a video job", json=body)


def _poll(context: CallContext, api: Service, provider: str, job_id: str) -> Any:
    path = f"videos/{job_id}" if provider == "openai" else f"generations/{job_id}"
    return api.call(context, "GET", path, what="checking the video job")


def _state(api: Service, provider: str, job: Any) -> tuple[str, str, str]:
    """``(job id, phase, detail)``; phase is running, done or failed."""
    what = "the video job"
    job_id = field(job, "id", str, api.name, what)
    if provider == "openai":
        status = field(job, "status", str, api.name, what)
        progress = job.get("progress")
        note = f"{status}, {progress}%" if isinstance(progress, (int, float)) else status
        if status == "completed":
            return job_id, "done", ""
        if status == "failed":
            error = job.get("error")
            reason = error.get("message") if isinstance(error, dict) else None
            return job_id, "failed", str(reason or "no reason given")
        return job_id, "running", note
    state = field(job, "state", str, api.name, what)
    if state == "completed":
        return job_id, "done", ""
    if state == "failed":
        return job_id, "failed", str(job.get("failure_reason") or "no reason given")
    return job_id, "running", state


def _content(
    context: CallContext, api: Service, cfg: dict[str, Any], provider: str, job: Any, max_bytes: int
) -> bytes:
    if provider == "openai":  # an authenticated API download from the same service
        url = api.url(f"videos/{job['id']}/content")
        data, _ = download(
            context,
            url,
            what="video",
            max_bytes=max_bytes,
            timeout=as_float(cfg, "download_timeout", 300.0, 0.5, 1800.0),
            headers=api.headers,
            secrets=api.secrets,
        )
        return data
    assets = field(job, "assets", dict, api.name, "the finished video job")
    url = field(assets, "video", str, api.name, "the finished video job")
    data, _ = download(
        context,
        url,
        what="video",
        max_bytes=max_bytes,
        timeout=as_float(cfg, "download_timeout", 300.0, 0.5, 1800.0),
    )
    return data


def video_generate(
    prompt: str | None = None,
    job_id: str | None = None,
    seconds: int | None = None,
    size: str | None = None,
    aspect_ratio: str | None = None,
    resolution: str | None = None,
    duration: str | None = None,
    loop: bool | None = None,
    *,
    context: CallContext,
) -> str:
    """Start (or resume with ``job_id``) a render, wait up to ``wait_seconds``, and save the clip."""
    cfg = section(context, SECTION)
    provider = _provider(cfg)
    if provider not in OPTIONS:
        raise ToolError(f"[plugins.video] provider {provider!r} is not supported", retryable=False)
    given = {
        k: v
        for k, v in {
            "seconds": seconds,
            "size": size,
            "aspect_ratio": aspect_ratio,
            "resolution": resolution,
            "duration": duration,
            "loop": loop,
        }.items()
        if v is not None
    }
    foreign = sorted(set(given) - set(OPTIONS[provider]))
    if foreign:
        raise ToolError(
            f"{', '.join(foreign)} {'is' if len(foreign) == 1 else 'are'} not an option of the {provider} video "
            f"provider; it takes {', '.join(OPTIONS[provider])}"
        )
    api = _service(cfg, provider)
    if job_id is not None:
        if not _JOB_ID.match(job_id):
            raise ToolError("'job_id' is not a job id this tool returned")
        job = _poll(context, api, provider, job_id)
    elif prompt and prompt.strip():
        model = as_text(cfg, "model", DEFAULTS[provider][1]) or DEFAULTS[provider][1]
        job = _start(context, api, provider, model, prompt, given)
    else:
        raise ToolError("give a 'prompt' to start a video, or the 'job_id' of one already started")
    wait = as_float(cfg, "wait_seconds", 240.0, 0.0, 600.0)
    pause = as_float(cfg, "poll_seconds", 5.0, 0.01, 60.0)
    started = time.monotonic()
    ident, phase, detail = _state(api, provider, job)
    while phase == "running" and time.monotonic() - started + pause <= wait:
        time.sleep(pause)
        job = _poll(context, api, provider, ident)
        ident, phase, detail = _state(api, provider, job)
    if phase == "failed":
        raise ToolError(f"the {provider} video job {ident} failed: {api.scrub(detail)}")
    if phase == "running":
        waited = round(time.monotonic() - started)
        return tool_result(
            message=(
                f"Video job {ident} is still rendering ({detail}) after {waited} s; call video_generate with "
                f'job_id="{ident}" to collect it.'
            ),
            job_id=ident,
            status="pending",
            files=[],
            provider=provider,
        )
    max_bytes = int(as_float(cfg, "max_download_mb", 200.0, 1.0, 2000.0) * 1_000_000)
    data = _content(context, api, cfg, provider, job, max_bytes)
    kind = sniff(data)
    if kind is None or not kind[0].startswith("video/"):
        raise ToolError(f"{api.name} returned something that is not a video ({len(data)} bytes)")
    path = save_media(context, "video", data, kind[1], "video")
    return describe(
        f"Generated a video (job {ident}), saved to {path}",
        [(path, kind[0])],
        job_id=ident,
        status="completed",
        provider=provider,
    )


def register(registry: ToolRegistry) -> None:
    registry.register(
        name="video_generate",
        toolset=TOOLSET,
        schema=SCHEMA,
        handler=video_generate,
        check_fn=_check,
        emoji="🎬",
        dynamic_schema_overrides=_overrides,
        timeout=900.0,
    )
