"""What ``video_analyze``'s frame sampling and ``computer_use``'s actions cost, and what their walls add.

Frames: 8 frames of a 2-minute 1280x720 H.264 video (made here by ffmpeg), sampled the way ``video_analyze`` does
(one ffmpeg, one seeking input per frame, in the sandbox) beside the usual alternative (one ffmpeg decoding the
whole video through an ``fps`` filter, in the sandbox) and beside the same seeking command run directly on the
host (the cost of the walls). Desktop: a click (xdotool) and a screenshot (ffmpeg x11grab) on a private Xvfb,
through the sandbox as ``computer_use`` runs them, beside the same commands run directly.

Subjects alternate round after round (``_util.interleave``); figures are min and median ms, and ratios.

Run: ``python benchmarks/bench_media.py [rounds]`` (needs ffmpeg, Xvfb and xdotool).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import interleave, line, ratio

from hermes_builtin.tools.web import _video_frames
from hermes_core.sandbox import Sandbox, settings_from_config

FRAMES = 8


def _video(folder: Path) -> Path:
    path = folder / "long.mp4"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=s=1280x720:r=25:d=120", "-pix_fmt", "yuv420p",
         "-g", "250", str(path)],
        check=True,
    )  # fmt: skip
    return path


def _fresh(out: Path) -> Path:
    """An empty folder for one run's frames."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    return out


def _frames(box: Sandbox, video: Path, out: Path) -> None:
    out = _fresh(out)
    probe = _video_frames.probe(box, video, out, video.parent, 60)
    at = _video_frames.times(probe.duration, FRAMES, None, None)
    _video_frames.extract(box, video, at, out, video.parent, 768, 60)


def _decode_all(box: Sandbox, video: Path, out: Path) -> None:
    out = _fresh(out)
    result = box.run(
        ["ffmpeg", "-v", "error", "-nostdin", "-y", "-i", str(video), "-vf", f"fps={FRAMES}/120,scale=768:-2",
         "-q:v", "4", str(out / "all%d.jpg")],
        workspace=str(video.parent), network="off", read_write=[out], timeout=120,
    )  # fmt: skip
    assert result.exit_code == 0, result.output


def _seek_direct(video: Path, out: Path) -> None:
    out = _fresh(out)
    at = _video_frames.times(120.0, FRAMES, None, None)
    argv = ["ffmpeg", "-v", "error", "-nostdin", "-y"]
    for t in at:
        argv += [*_video_frames._INPUT, "-ss", f"{t:.3f}", "-i", str(video)]
    for i in range(len(at)):
        argv += ["-map", f"{i}:v:0", "-frames:v", "1", "-vf", "scale='min(768,iw)':-2", "-q:v", "4",
                 str(out / f"direct{i}.jpg")]  # fmt: skip
    subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", str(video)], check=True,
                   capture_output=True)  # fmt: skip
    subprocess.run(argv, check=True)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    folder = Path(tempfile.mkdtemp(prefix="hermes-bench-media-"))
    box = Sandbox(settings_from_config(None), workspace=folder)
    x_box = Sandbox(replace(box.settings, unix_sockets=True), workspace=folder)
    xvfb = None
    try:
        video = _video(folder)
        out = folder / "out"
        out.mkdir()
        print(f"backend {box.backend}; {FRAMES} frames of a 120 s 1280x720 H.264 video; {rounds} rounds")
        got = interleave(
            {
                "seek per frame, sandboxed (ours)": lambda: _frames(box, video, folder / "a"),
                "decode everything, sandboxed": lambda: _decode_all(box, video, folder / "b"),
                "seek per frame, on the host": lambda: _seek_direct(video, folder / "c"),
            },
            number=1,
            rounds=rounds,
        )
        ours = got["seek per frame, sandboxed (ours)"]
        for label, values in got.items():
            lo, mid = ratio(values, ours)
            print(line(label, values, "ms", 1e6, f"   x{lo:.2f} / x{mid:.2f} of ours"))

        read, write = os.pipe()
        xvfb = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
            pass_fds=[write],
            stderr=subprocess.DEVNULL,
        )
        os.close(write)
        with os.fdopen(read) as numbers:
            display = f":{numbers.readline().strip()}"
        socket = [Path(f"/tmp/.X11-unix/X{display[1:]}")]
        env = {**os.environ, "DISPLAY": display}
        click = ["xdotool", "mousemove", "--sync", "100", "100", "click", "1"]
        shot = ["ffmpeg", "-v", "quiet", "-nostdin", "-y", "-f", "x11grab", "-i", display, "-frames:v", "1",
                str(out / "screen.png")]  # fmt: skip

        def boxed(argv: list[str]) -> None:
            result = x_box.run(
                argv, workspace=str(folder), env={"DISPLAY": display}, network="off", read_only=socket,
                read_write=[out], timeout=30,
            )  # fmt: skip
            assert result.exit_code == 0, result.output

        desk = interleave(
            {
                "click, sandboxed (ours)": lambda: boxed(click),
                "click, on the host": lambda: subprocess.run(click, env=env, check=True),
                "screenshot, sandboxed (ours)": lambda: boxed(shot),
                "screenshot, on the host": lambda: subprocess.run(shot, env=env, check=True),
            },
            number=1,
            rounds=rounds,
        )
        print("desktop actions on a 1280x800 Xvfb")
        for label, values in desk.items():
            print(line(label, values, "ms", 1e6))
        for what in ("click", "screenshot"):
            lo, mid = ratio(desk[f"{what}, sandboxed (ours)"], desk[f"{what}, on the host"])
            print(f"{what}: sandboxed / host x{lo:.2f} (min) x{mid:.2f} (median)")
    finally:
        if xvfb is not None:
            xvfb.terminate()
            xvfb.wait(10)
        box.close()
        x_box.close()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
