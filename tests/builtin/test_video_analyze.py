"""``video_analyze`` on a real video made by ffmpeg (two seconds of red, then two of blue): the frames ffmpeg
samples in the sandbox reach a local stub model, which checks their colours; URLs, ranges, bad input, hiding
with the reason, and files that would make ffmpeg read other files (with the guard off)."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from web_support import ALLOW_LOOPBACK
from werkzeug import Request, Response

from hermes_core import ToolSystem
from hermes_core.testing import unguarded

Make = Callable[..., ToolSystem]
pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs ffmpeg (.ci/run installs it)")


def _colour(jpeg: bytes) -> str:
    """The colour name of a frame: its average pixel, decoded by ffmpeg."""
    out = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", "-", "-vf", "scale=1:1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
        input=jpeg,
        capture_output=True,
        check=True,
    ).stdout
    r, g, b = out[:3]
    return "red" if r > 200 > 60 > max(g, b) else "blue" if b > 200 > 60 > max(r, g) else f"rgb{(r, g, b)}"


@pytest.fixture
def clip(workspace: Path) -> Path:
    """A 4 s, 64x48 H.264 video: red for two seconds, then blue."""
    path = workspace / "clip.mp4"
    subprocess.run(
        [
            *("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "color=c=red:s=64x48:d=2:r=10"),
            *("-f", "lavfi", "-i", "color=c=blue:s=64x48:d=2:r=10"),
            *("-filter_complex", "[0][1]concat=n=2:v=1", "-pix_fmt", "yuv420p", str(path)),
        ],
        check=True,
    )
    return path


@pytest.fixture
def model(httpserver: HTTPServer) -> list[dict[str, Any]]:
    """A stub vision model: records each request's texts and decoded images, answers with the colours it saw."""
    seen: list[dict[str, Any]] = []

    def answer(request: Request) -> Response:
        body = request.get_json()
        parts = body["messages"][0]["content"]
        images = [
            base64.b64decode(p["image_url"]["url"].split(";base64,", 1)[1]) for p in parts if "image_url" in p
        ]
        mimes = [p["image_url"]["url"].split(";", 1)[0] for p in parts if "image_url" in p]
        texts = [p["text"] for p in parts if p["type"] == "text"]
        seen.append({"model": body["model"], "texts": texts, "images": images, "mimes": mimes})
        colours = ", ".join(_colour(image) for image in images)
        reply = {"choices": [{"message": {"role": "assistant", "content": f"I see {colours}"}}]}
        return Response(json.dumps(reply), content_type="application/json")

    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_handler(answer)
    return seen


def _system(make: Make, server: HTTPServer, **video: Any) -> ToolSystem:
    plugins = {
        "vision": {"base_url": server.url_for("/v1"), "model": "vis-1"},
        "web": ALLOW_LOOPBACK,
        "video_analyze": video,
    }
    return make(config={"plugins": plugins})


def _error(outcome: Any) -> str:
    assert outcome.status in ("error", "denied"), outcome.result
    return str(json.loads(outcome.result)["error"])


def test_sampled_frames_reach_the_model(
    make_builtin_system: Make, httpserver: HTTPServer, model: list[dict[str, Any]], clip: Path
) -> None:
    system = _system(make_builtin_system, httpserver)
    out = system.call("video_analyze", {"video": "clip.mp4", "question": "What colours?", "frames": 4})
    assert out == "I see red, red, blue, blue\n\n(frames at 0:00.5, 0:01.5, 0:02.5, 0:03.5 of a 0:04.0 video)"
    (sent,) = model
    assert sent["model"] == "vis-1" and sent["mimes"] == ["data:image/jpeg"] * 4
    assert all(image.startswith(b"\xff\xd8\xff") for image in sent["images"])
    assert (
        sent["texts"][0]
        == "What colours?\n\nBelow are 4 frame(s) of a 0:04.0 video (clip.mp4, 64x48), in order."
    )
    assert sent["texts"][1:] == [f"Frame {i} of 4, at 0:0{i - 1}.5:" for i in range(1, 5)]

    later = system.call("video_analyze", {"video": str(clip), "frames": 3, "start": 2.5, "end": 4})
    assert later.startswith("I see blue, blue, blue\n") and "at 0:02.8, 0:03.2, 0:03.8" in later
    assert "Describe what happens" in model[1]["texts"][0]  # the default question
    assert system.call("video_analyze", {"video": "clip.mp4"}).startswith("I see red, red, red, red, blue")
    listing = system.call("terminal", {"command": "ls -a /tmp; echo listed"})  # the session's own /tmp
    assert "listed" in listing and "hermes-video-" not in listing  # each call's frames are gone with it


def test_a_video_url_is_downloaded_under_the_network_policy(
    make_builtin_system: Make, httpserver: HTTPServer, model: list[dict[str, Any]], clip: Path
) -> None:
    httpserver.expect_request("/media/clip.mp4").respond_with_data(
        clip.read_bytes(), content_type="video/mp4"
    )
    system = _system(make_builtin_system, httpserver, max_bytes=1_000_000)
    out = system.call("video_analyze", {"video": httpserver.url_for("/media/clip.mp4"), "frames": 2})
    assert out.startswith("I see red, blue\n") and "(clip.mp4, 64x48)" in model[0]["texts"][0]
    small = _system(make_builtin_system, httpserver, max_bytes=100)
    assert "100" in _error(
        small.call_outcome("video_analyze", {"video": httpserver.url_for("/media/clip.mp4")})
    )
    strict = make_builtin_system(
        config={"plugins": {"vision": {"base_url": httpserver.url_for("/v1"), "model": "m"}}}
    )
    refused = strict.call_outcome("video_analyze", {"video": httpserver.url_for("/media/clip.mp4")})
    assert "loopback" in _error(refused) and len(model) == 1  # the web policy holds for videos too


def test_bad_input_is_a_message_the_model_can_act_on(
    make_builtin_system: Make,
    httpserver: HTTPServer,
    model: list[dict[str, Any]],
    clip: Path,
    workspace: Path,
) -> None:
    system = _system(make_builtin_system, httpserver, max_frames=6)
    (workspace / "notes.mp4").write_text("just some text\n" * 20)
    for args, message in [
        ({"video": "missing.mp4"}, "video file not found: missing.mp4"),
        ({"video": "notes.mp4"}, "notes.mp4 is not a readable video"),
        ({"video": "clip.mp4", "frames": 7}, "at most 6 frames ([plugins.video_analyze] max_frames), not 7"),
        ({"video": "clip.mp4", "start": 9}, "start 9 s is past the end of the video (4 s)"),
        ({"video": "clip.mp4", "start": 3, "end": 1}, "end (1 s) must come after start (3 s)"),
        ({"video": "ftp://example.org/a.mp4"}, "unsupported video source"),
        ({"video": " "}, "video is empty"),
    ]:
        assert message in _error(system.call_outcome("video_analyze", args)), args
    assert not model  # nothing reached the model


def test_hidden_with_the_reason(
    make_builtin_system: Make,
    httpserver: HTTPServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    bare = make_builtin_system()
    assert (
        bare.hidden()["video_analyze"]
        == "no vision model configured: set base_url and model in [plugins.vision]"
    )
    configured = _system(make_builtin_system, httpserver)
    assert "video_analyze" in configured.available()
    wrong = _system(make_builtin_system, httpserver, frame_width="big")
    assert "[plugins.video_analyze] frame_width must be an integer" in wrong.hidden()["video_analyze"]
    bin_dir = tmp_path / "bin"  # a PATH with ffmpeg and without ffprobe
    bin_dir.mkdir()
    ffmpeg = shutil.which("ffmpeg")
    assert ffmpeg is not None
    (bin_dir / "ffmpeg").symlink_to(ffmpeg)
    monkeypatch.setenv("PATH", str(bin_dir))
    without = _system(make_builtin_system, httpserver)
    assert without.hidden()["video_analyze"] == "needs ffprobe to sample frames (apt install ffmpeg)"


def test_files_that_would_make_ffmpeg_read_other_files_are_refused(
    make_builtin_system: Make, httpserver: HTTPServer, model: list[dict[str, Any]], clip: Path, tmp_path: Path
) -> None:
    """A playlist or a concat script named like a video would have ffmpeg open files outside the workspace (and
    render their frames for the model); with the guard off they are still refused."""
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.mp4"
    shutil.copy(clip, secret)  # a real video the model must never see
    workspace = clip.parent
    (workspace / "playlist.mp4").write_text(
        f"#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4.0,\n{secret}\n#EXT-X-ENDLIST\n"
    )
    (workspace / "concat.mp4").write_text(f"ffconcat version 1.0\nfile '{secret}'\n")
    system = unguarded(_system(make_builtin_system, httpserver))
    for name in ("playlist.mp4", "concat.mp4"):
        refused = system.call_outcome("video_analyze", {"video": name})
        assert "is not a video file ffmpeg may read here" in _error(refused), name
    assert not model


def test_the_walls_hold_where_the_demuxer_list_would_not(
    make_builtin_system: Make,
    httpserver: HTTPServer,
    model: list[dict[str, Any]],
    clip: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With playlists allowed on purpose (and the guard off), a playlist reaches a video inside the workspace, but
    the sandbox hides one outside it."""
    from hermes_builtin.tools.web import _video_frames

    widened = ["-format_whitelist", f"hls,{_video_frames.DEMUXERS}", "-protocol_whitelist", "file"]
    monkeypatch.setattr(_video_frames, "_INPUT", widened)
    outside = tmp_path / "outside"
    outside.mkdir()
    workspace = clip.parent
    segment = workspace / "clip.ts"  # playlists play MPEG-TS segments
    subprocess.run(["ffmpeg", "-v", "error", "-i", str(clip), "-c", "copy", str(segment)], check=True)
    shutil.copy(segment, outside / "secret.ts")
    for name, target in (("inside.mp4", segment), ("playlist.mp4", outside / "secret.ts")):
        (workspace / name).write_text(
            f"#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4.0,\n{target}\n#EXT-X-ENDLIST\n"
        )
    system = unguarded(_system(make_builtin_system, httpserver))
    assert system.call("video_analyze", {"video": "inside.mp4", "frames": 2}).startswith("I see red, blue")
    refused = system.call_outcome("video_analyze", {"video": "playlist.mp4", "frames": 2})
    assert "playlist.mp4 is not a readable video" in _error(refused)
    direct = system.call_outcome("video_analyze", {"video": str(outside / "secret.ts")})
    # outside the environment's roots, guard or not (under /tmp it is not even there: the session has its own)
    assert "cannot be read" in _error(direct) or "video file not found" in _error(direct)
    assert len(model) == 1
