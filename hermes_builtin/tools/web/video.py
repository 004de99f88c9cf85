"""``video_analyze``: frames sampled from a video, sent with a question to the ``[plugins.vision]`` model.

The video is a file of the session's environment (the path guard judges it, the environment resolves it beneath
its roots, as for the file tools) or an http(s) URL (downloaded under the ``[plugins.web]`` network policy into
the session's ``/tmp``); ffprobe and ffmpeg run in the session's environment (``_video_frames``). Hidden, with the
reason, without ffmpeg, without a vision model, or when the environment cannot run commands.

```toml
[plugins.video_analyze]
frames = 8               # frames sampled when the call does not say (at most max_frames)
max_frames = 24
frame_width = 768        # pixels; frames are scaled down to this width
max_bytes = 200_000_000  # largest video downloaded from a URL
timeout = 120            # seconds for ffprobe and ffmpeg
```
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from hermes_core import CallContext, ToolError, ToolRegistry, Unavailable
from hermes_core.fileio import which

TOOLSET = "vision"
SECTION = "video_analyze"
DEFAULT_QUESTION = "Describe what happens in this video."

SCHEMA: dict[str, Any] = {
    "name": "video_analyze",
    "description": (
        "Ask a vision model about a video: frames sampled evenly (from start to end) go to the model with your "
        "question. video is a workspace file path or an http(s) URL."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "video": {"type": "string", "description": "Path or URL of the video."},
            "question": {"type": "string", "description": "What to find out (default: what happens)."},
            "frames": {"type": "integer", "minimum": 1, "description": "How many frames (default 8)."},
            "start": {"type": "number", "minimum": 0, "description": "Seconds."},
            "end": {"type": "number", "minimum": 0, "description": "Seconds."},
        },
        "required": ["video"],
        "additionalProperties": False,
    },
}


class VideoSettings(NamedTuple):
    frames: int = 8
    max_frames: int = 24
    frame_width: int = 768
    max_bytes: int = 200_000_000
    timeout: float = 120.0

    @classmethod
    def from_config(cls, section: Mapping[str, Any]) -> VideoSettings:
        from ._web_settings import _int, _number

        most = _int(section, SECTION, "max_frames", 24, 1)
        return cls(
            frames=min(_int(section, SECTION, "frames", 8, 1), most),
            max_frames=most,
            frame_width=_int(section, SECTION, "frame_width", 768, 16),
            max_bytes=_int(section, SECTION, "max_bytes", 200_000_000, 1),
            timeout=_number(section, SECTION, "timeout", 120.0),
        )


def _source(video: str, folder: str, limit: int, context: CallContext, env: Any) -> str:
    """The video as a path of the environment: a guarded path beneath its roots, or a URL downloaded there."""
    source = video.strip()
    if not source:
        raise ToolError("video is empty; give a file path or a URL")
    if source.lower().startswith(("http://", "https://")):
        from . import web
        from ._web_extract import download

        web_settings = web.settings_of(context)
        body = download(web.fetch_client(context, web_settings), web_settings, source, limit).body
        env.write(f"{folder}/video", body)
        return f"{folder}/video"
    if "://" in source:
        raise ToolError(f"unsupported video source {source!r}; use a file path or an http(s) URL")
    from ..files._where import locate

    where = locate(context, source, "read")
    try:
        kind = env.stat(where.path).kind
    except FileNotFoundError:
        raise ToolError(f"video file not found: {source}") from None
    if kind != "file":
        raise ToolError(f"{source} is not a file")
    return where.path


def video_analyze(
    video: str,
    question: str = DEFAULT_QUESTION,
    frames: int | None = None,
    start: float | None = None,
    end: float | None = None,
    *,
    context: CallContext,
) -> str:
    """The vision model's answer about frames of ``video`` (see ``SCHEMA``)."""
    import secrets

    from hermes_core.environments import environment_for

    from . import _video_frames as vf
    from . import _vision, web
    from ._web_settings import SettingsError

    try:
        settings = VideoSettings.from_config(context.plugin_config(SECTION))
        vision = _vision.settings_of(context)
        client = web.api_client(context, web.settings_of(context))
    except SettingsError as err:
        raise ToolError(str(err), retryable=False) from None
    count = frames or settings.frames
    if count > settings.max_frames:
        raise ToolError(f"at most {settings.max_frames} frames ([plugins.{SECTION}] max_frames), not {count}")
    env = environment_for(context)
    folder = f"{env.temp_dir.rstrip('/')}/hermes-video-{secrets.token_hex(6)}"
    env.write(f"{folder}/.frames", b"")  # makes the folder, private to this call
    try:
        path = _source(video, folder, settings.max_bytes, context, env)
        found = vf.probe(env, path, settings.timeout)
        at = vf.times(found.duration, count, start, end)
        images = vf.extract(env, path, at, folder, settings.frame_width, settings.timeout)
    finally:
        env.run(["rm", "-rf", "--", folder], timeout=30, tool="video_analyze")
    length = f"a {vf.clock(found.duration)} video" if found.duration is not None else "a video"
    name = video.strip().rsplit("/", 1)[-1]
    prompt = (
        f"{question.strip() or DEFAULT_QUESTION}\n\n"
        f"Below are {len(at)} frame(s) of {length} ({name}, {found.width}x{found.height}), in order."
    )
    captions = [f"Frame {i} of {len(at)}, at {vf.clock(t)}:" for i, t in enumerate(at, 1)]
    answer = _vision.analyze_frames(client, vision, prompt, list(zip(captions, images, strict=True)))
    return f"{answer}\n\n(frames at {', '.join(vf.clock(t) for t in at)} of {length})"


def video_available(system: Any) -> tuple[bool, str] | Unavailable:
    """Shown with ffmpeg and ffprobe installed, a vision model configured and the environment able to run."""
    from ._vision import available
    from ._web_settings import SettingsError

    missing = [tool for tool in ("ffmpeg", "ffprobe") if which(tool) is None]
    if missing:
        return Unavailable(
            f"needs {' and '.join(missing)} to sample frames (apt install ffmpeg)", fix="apt install ffmpeg"
        )
    model = available(system)
    if isinstance(model, Unavailable) or not model[0]:
        return model
    try:
        VideoSettings.from_config(system.plugin_config(SECTION))
    except SettingsError as err:
        return False, str(err)
    from hermes_core.environments import environment_check  # only once the rest holds: it loads the kinds

    return environment_check(system)


def register(registry: ToolRegistry) -> None:
    """Register ``video_analyze`` (toolset "vision")."""
    registry.register(
        name="video_analyze",
        toolset=TOOLSET,
        schema=SCHEMA,
        handler=video_analyze,
        check_fn=video_available,
        emoji="🎞️",
        max_result_size_chars=20_000,
        parallel_safe=True,
    )
