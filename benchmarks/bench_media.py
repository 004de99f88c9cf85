"""What ``video_analyze``'s frame sampling and ``computer_use``'s actions cost, and what their walls add.

Frames: 8 frames of a 2-minute 1280x720 H.264 video (made here by ffmpeg), sampled the way ``video_analyze`` does
(one ffmpeg, one seeking input per frame, in the session's local environment: the sandbox) beside the usual
alternative (one ffmpeg decoding the whole video through an ``fps`` filter, in the same environment) and beside the
same seeking command run directly on the host (the cost of the walls). Desktop: a click (xdotool) and a screenshot (ffmpeg x11grab) on a private Xvfb,
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

import hermes_builtin.plugin
from hermes_builtin.tools.web import _video_frames
from hermes_core import ToolSystem
from hermes_core.environments import Environment, environment_for
from hermes_core.sandbox import Sandbox, sandbox_for

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


class _Owner:
    """What ``environment_for`` needs of a call: the system's host, its workspace and a session."""

    def __init__(self, system: ToolSystem) -> None:
        self.host, self.workspace, self.session_id = system.host, system.workspace, "bench"


def _frames(env: Environment, video: Path) -> None:
    out = f"{env.temp_dir}/ours"
    env.write(f"{out}/.frames", b"")
    probe = _video_frames.probe(env, str(video), 60)
    at = _video_frames.times(probe.duration, FRAMES, None, None)
    _video_frames.extract(env, str(video), at, out, 768, 60)
    env.run(["rm", "-rf", out])


def _decode_all(env: Environment, video: Path) -> None:
    out = f"{env.temp_dir}/all"
    env.write(f"{out}/.frames", b"")
    result = env.run(
        ["ffmpeg", "-v", "error", "-nostdin", "-y", "-i", str(video), "-vf", f"fps={FRAMES}/120,scale=768:-2",
         "-q:v", "4", f"{out}/all%d.jpg"],
        timeout=120,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    env.run(["rm", "-rf", out])


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
    os.environ.setdefault("HERMES_HOME", str(folder / "home"))
    system = ToolSystem.load(
        load_entry_points=False, plugins_dir=False, plugins=[hermes_builtin.plugin], workspace=folder
    )
    env = environment_for(_Owner(system))
    box = sandbox_for(system)
    x_box = Sandbox(replace(box.settings, unix_sockets=True), workspace=folder, hidden=box.hidden_paths())
    xvfb = None
    try:
        video = _video(folder)
        out = folder / "out"
        out.mkdir()
        print(f"backend {box.backend}; {FRAMES} frames of a 120 s 1280x720 H.264 video; {rounds} rounds")
        got = interleave(
            {
                "seek per frame, sandboxed (ours)": lambda: _frames(env, video),
                "decode everything, sandboxed": lambda: _decode_all(env, video),
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
        x_box.close()
        system.close()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
