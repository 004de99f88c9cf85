"""Frames sampled from a video with ffprobe and ffmpeg, run in the session's environment (``video_analyze``).

Both run where the session's commands run (locally: inside the sandbox's walls, seeing the workspace, the
session's ``/tmp`` and the granted folders, nothing else); the frames go to a folder of the session's ``/tmp`` and
are read back through the environment. A media file is untrusted input, and a file that is really a playlist or
a concat script would make ffmpeg open other files, so only the demuxers of ordinary video containers are allowed
(``-format_whitelist``) and only plain files (``-protocol_whitelist file``): no network either.

The frames are evenly spread over the part asked for (the middle of each of ``count`` equal slices), each seek
its own input of one ffmpeg run, scaled down to ``width`` pixels and encoded as JPEG.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from hermes_core import ToolError

# The demuxers of ordinary video files: MP4/MOV, Matroska/WebM, AVI, FLV, MPEG-TS/PS, Ogg, ASF/WMV, GIF and raw
# H.264/HEVC/MPEG-4 streams. Not playlists (hls, concat), images sequences (image2) or text renderers (tty...).
DEMUXERS = "mov,matroska,webm,avi,flv,mpegts,mpeg,ogg,asf,gif,h264,hevc,m4v"
_INPUT = ["-format_whitelist", DEMUXERS, "-protocol_whitelist", "file"]


@dataclass(frozen=True)
class Probe:
    duration: float | None  # seconds; None for a stream without one (a raw stream, a one-frame file)
    width: int
    height: int


def clock(seconds: float) -> str:
    """``1:02.5`` (``1:02:03.0`` past an hour)."""
    minutes, rest = divmod(max(seconds, 0.0), 60)
    hours, minutes = divmod(int(minutes), 60)
    return f"{hours}:{minutes:02d}:{rest:04.1f}" if hours else f"{minutes}:{rest:04.1f}"


def _run(env: Any, argv: list[str], timeout: float) -> tuple[int | None, str]:
    result = env.run(argv, timeout=timeout, tool="video_analyze", split_output=True, stderr_bytes=4000)
    if result.timed_out:
        raise ToolError(f"reading the video took longer than {timeout:g} s ([plugins.video_analyze] timeout)")
    return result.exit_code, result.stdout if result.exit_code == 0 else result.stderr


def _why(stderr: str, name: str) -> str:
    lines = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip()]
    if any("not on whitelist" in ln for ln in lines):
        return f"{name} is not a video file ffmpeg may read here (a playlist or script is refused)"
    detail = lines[-1][:200] if lines else "ffmpeg could not read it"
    return f"{name} is not a readable video: {detail}"


def probe(env: Any, video: str, timeout: float) -> Probe:
    """The video's duration and size; ``ToolError`` when it is no video ffprobe can read here."""
    name = PurePosixPath(video).name
    entries = "format=duration:stream=codec_type,width,height"
    code, text = _run(
        env, ["ffprobe", "-v", "error", *_INPUT, "-show_entries", entries, "-of", "json", video], timeout
    )
    if code != 0:
        raise ToolError(_why(text, name))
    try:
        found = json.loads(text)
    except ValueError:
        raise ToolError(f"ffprobe gave no readable answer about {name}") from None
    streams = [s for s in found.get("streams", []) if s.get("codec_type") == "video" and s.get("width")]
    if not streams:
        raise ToolError(f"{name} has no video stream")
    try:
        duration: float | None = float(found.get("format", {}).get("duration"))
    except (TypeError, ValueError):
        duration = None
    return Probe(duration, int(streams[0]["width"]), int(streams[0]["height"]))


def times(duration: float | None, count: int, start: float | None, end: float | None) -> list[float]:
    """``count`` evenly spread times within [start, end] (the whole video by default)."""
    first = max(start or 0.0, 0.0)
    last = end if end is not None else duration
    if duration is not None:
        last = min(last if last is not None else duration, duration)
        if first >= duration:
            raise ToolError(f"start {first:g} s is past the end of the video ({duration:g} s)")
    if last is None:
        return [first]  # no known length: the one frame at the start
    if last <= first:
        raise ToolError(f"end ({last:g} s) must come after start ({first:g} s)")
    span = last - first
    return [round(first + span * (i + 0.5) / count, 3) for i in range(count)]


def extract(env: Any, video: str, at: list[float], out: str, width: int, timeout: float) -> list[bytes]:
    """JPEG frames of ``video`` at the times ``at`` (seconds), ``width`` pixels wide at most, made in ``out``."""
    name = PurePosixPath(video).name
    argv = ["ffmpeg", "-v", "error", "-nostdin", "-y"]
    for t in at:
        argv += [*_INPUT, "-ss", f"{t:.3f}", "-i", video]
    scale = f"scale='min({width},iw)':-2"
    for i in range(len(at)):
        argv += ["-map", f"{i}:v:0", "-frames:v", "1", "-vf", scale, "-q:v", "4", f"{out}/frame{i}.jpg"]
    code, text = _run(env, argv, timeout)
    if code != 0:
        raise ToolError(_why(text, name))
    frames = []
    for i in range(len(at)):
        try:
            with env.open_read(f"{out}/frame{i}.jpg") as fh:
                frame = fh.read()
        except OSError:
            frame = b""
        if not frame:
            raise ToolError(f"ffmpeg made no frame of {name} at {clock(at[i])}")
        frames.append(frame)
    return frames
