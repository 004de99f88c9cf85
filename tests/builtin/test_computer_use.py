"""``computer_use`` on a real Xvfb with a small real Tk application (run by ``wish``): a button whose label and
colour change when clicked, an entry that reports what was typed when Return is pressed, and wheel events.
The screenshots are decoded with ffmpeg to show the click changed the screen."""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_core import ToolSystem
from hermes_core.security import ApprovalRequest, CallbackApprover
from hermes_core.testing import unguarded

Make = Callable[..., ToolSystem]
WIDTH, HEIGHT = 640, 480
NEEDED = ("Xvfb", "xdotool", "ffmpeg", "wish")
pytestmark = [
    pytest.mark.skipif(
        any(shutil.which(tool) is None for tool in NEEDED),
        reason="needs xvfb, xdotool, ffmpeg and tk (.ci/run)",
    ),
    pytest.mark.timeout(120),
]

APP = """
wm geometry . 320x240+0+0
button .b -text "Click me" -bg gray70 -activebackground gray70 -font {Helvetica 20} -command {
  .b configure -text "Clicked!" -bg "#00c000" -activebackground "#00c000"; puts clicked; flush stdout
}
bind .b <Motion> {puts "motion %X %Y"; flush stdout}
bind all <Button-4> {puts "wheel up"; flush stdout}
bind all <Button-5> {puts "wheel down"; flush stdout}
entry .e
bind .e <Return> {puts "entered [.e get]"; flush stdout}
pack .b -expand 1 -fill both
pack .e -fill x
update
puts ready; flush stdout
"""


@pytest.fixture(scope="module")
def display() -> Iterator[str]:
    """A private Xvfb (it picks a free display number and tells it through -displayfd)."""
    read, write = os.pipe()
    server = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write), "-screen", "0", f"{WIDTH}x{HEIGHT}x24", "-nolisten", "tcp"],
        pass_fds=[write],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    with os.fdopen(read) as numbers:
        number = numbers.readline().strip()
    assert number, "Xvfb did not start"
    yield f":{number}"
    server.terminate()
    server.wait(10)


class App:
    """The Tk application, with the lines it prints."""

    def __init__(self, display: str) -> None:
        self.proc = subprocess.Popen(
            ["wish"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "DISPLAY": display},
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(APP)
        self.proc.stdin.flush()
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        assert self.next() == "ready"
        time.sleep(0.3)  # mapped and drawn

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())

    def next(self, timeout: float = 10) -> str:
        return self.lines.get(timeout=timeout)

    def wait_for(self, line: str) -> None:
        while self.next() != line:
            pass

    def said(self) -> list[str]:
        """What the app printed since the last look (after a moment for stragglers)."""
        time.sleep(0.3)
        found = []
        while not self.lines.empty():
            found.append(self.lines.get())
        return found

    def said_at_least(self, line: str, times: int = 1, timeout: float = 10) -> list[str]:
        """What the app printed, once ``line`` came ``times`` times (a busy machine may take seconds), plus any
        stragglers: so a caller can also check that no more came than it expects."""
        found: list[str] = []
        deadline = time.monotonic() + timeout
        while found.count(line) < times and time.monotonic() < deadline:
            try:
                found.append(self.lines.get(timeout=max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                break
        return found + self.said()

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def app(display: str) -> Iterator[App]:
    running = App(display)
    yield running
    running.close()


def _system(make: Make, display: str, approvals: dict[str, Any] | None = None, **kwargs: Any) -> ToolSystem:
    config = {"plugins": {"computer_use": {"display": display}}, "approvals": approvals or {}}
    return make(config=config, **kwargs)


def _approver(seen: list[ApprovalRequest]) -> CallbackApprover:
    def approve(request: ApprovalRequest) -> str:
        seen.append(request)
        return "once"

    return CallbackApprover(approve)


def _pixels(png: bytes) -> bytes:
    out = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", "-", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
        input=png,
        capture_output=True,
        check=True,
    ).stdout
    assert len(out) == WIDTH * HEIGHT * 3
    return out


def _green(rgb: bytes) -> int:
    """Pixels of the clicked button's colour in the window's area (320x240 at the top left)."""
    count = 0
    for y in range(0, 200, 4):
        for x in range(0, 320, 4):
            i = (y * WIDTH + x) * 3
            count += rgb[i] < 30 and rgb[i + 1] > 170 and rgb[i + 2] < 30
    return count


def _shot(system: ToolSystem) -> bytes:
    outcome = system.call_outcome("computer_use", {"action": "screenshot"})
    assert outcome.status == "ok", outcome.result
    (image,) = outcome.attachments
    assert image.mime_type == "image/png" and image.kind == "image"
    assert f"({WIDTH}x{HEIGHT}), attached and saved to " in outcome.result
    assert Path(outcome.result.rsplit("saved to ", 1)[1].rstrip(".")).read_bytes() == image.data
    return image.data


def test_a_click_changes_the_button_and_the_screenshot_shows_it(
    make_builtin_system: Make, display: str, app: App
) -> None:
    seen: list[ApprovalRequest] = []
    system = _system(make_builtin_system, display, approver=_approver(seen))
    before = _pixels(_shot(system))
    assert _green(before) == 0
    assert system.call("computer_use", {"action": "click", "x": 160, "y": 100}) == "Clicked at (160, 100)."
    app.wait_for("clicked")
    after = _pixels(_shot(system))
    assert _green(after) > 1000  # the button is green now (about 50 x 45 of the sampled points)
    assert [r.kind for r in seen] == ["computer_use"]  # asked once: the click, not the screenshots
    assert seen[0].subject == f"computer_use mousemove --sync 160 100 click 1 on {display}"
    assert seen[0].reason == f"click at (160, 100) on the desktop {display}"


def test_move_type_key_and_scroll(make_builtin_system: Make, display: str, app: App) -> None:
    system = _system(make_builtin_system, display, {"computer_use": "run"})
    assert (
        system.call("computer_use", {"action": "move", "x": 50, "y": 60}) == "Moved the pointer to (50, 60)."
    )
    assert "motion 50 60" in app.said_at_least("motion 50 60")
    system.call("computer_use", {"action": "click", "x": 160, "y": 228})  # focus the entry
    assert system.call("computer_use", {"action": "type", "text": "héllo wörld"}) == "Typed 11 characters."
    assert system.call("computer_use", {"action": "key", "keys": "Return"}) == "Pressed Return."
    assert "entered héllo wörld" in app.said_at_least("entered héllo wörld")
    system.call("computer_use", {"action": "key", "keys": "ctrl+slash BackSpace"})  # Tk: select all, delete
    system.call("computer_use", {"action": "type", "text": "second"})
    system.call("computer_use", {"action": "key", "keys": "Return"})
    assert "entered second" in app.said_at_least("entered second")
    scrolled = system.call(
        "computer_use", {"action": "scroll", "direction": "down", "amount": 2, "x": 100, "y": 100}
    )
    assert scrolled == "Scrolled down 2 step(s) at (100, 100)."
    assert app.said_at_least("wheel down", 2).count("wheel down") == 2
    system.call("computer_use", {"action": "scroll", "direction": "up"})
    assert app.said_at_least("wheel up", 3).count("wheel up") == 3


def test_nothing_happens_without_approval(make_builtin_system: Make, display: str, app: App) -> None:
    headless = _system(make_builtin_system, display)  # "ask" by default, and nobody to ask
    for args in (
        {"action": "click", "x": 160, "y": 100},
        {"action": "type", "text": "x"},
        {"action": "key", "keys": "Return"},
        {"action": "scroll", "direction": "down"},
    ):
        outcome = headless.call_outcome("computer_use", args)
        assert outcome.status == "denied", args
        assert '[approvals] computer_use = "run"' in json.loads(outcome.result)["error"]
    assert app.said() == []
    assert _green(_pixels(_shot(headless))) == 0  # screenshots need no approval


def test_bad_input_and_key_injection_are_refused(
    make_builtin_system: Make, display: str, app: App, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    system = unguarded(_system(make_builtin_system, display, {"computer_use": "run"}))
    for args, message in [
        ({"action": "key", "keys": f"a exec touch {marker}"}, "'exec' is not a key name"),
        ({"action": "key", "keys": "--window 1 a"}, "'--window' is not a key name"),
        ({"action": "key", "keys": " "}, "key needs keys"),
        ({"action": "type"}, "type needs text"),
        ({"action": "move", "x": 5}, "move needs both x and y"),
        ({"action": "scroll"}, "scroll needs a direction"),
        ({"action": "type", "text": "x" * 5001}, "type at most 5,000 at a time"),
    ]:
        outcome = system.call_outcome("computer_use", args)
        assert outcome.status == "error" and message in json.loads(outcome.result)["error"], args
    assert not marker.exists() and app.said() == []


def test_hidden_without_a_display(make_builtin_system: Make, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    bare = make_builtin_system()
    assert bare.hidden()["computer_use"].startswith(
        "no X display: set DISPLAY or [plugins.computer_use] display"
    )
    gone = _system(make_builtin_system, ":4242")
    assert gone.hidden()["computer_use"] == "X display :4242 is not running (no /tmp/.X11-unix/X4242)"
    remote = _system(make_builtin_system, "example.org:0")
    assert "is not a local X display" in remote.hidden()["computer_use"]
    refused = gone.call_outcome("computer_use", {"action": "screenshot"})
    assert refused.status == "error" and "is not available right now" in refused.result


def test_the_x_clients_run_inside_the_walls(
    make_builtin_system: Make, display: str, app: App, tmp_path: Path, workspace: Path
) -> None:
    from hermes_core.sandbox import sandbox_for

    secret = tmp_path / "outside.txt"
    secret.write_text("TOP-SECRET")
    system = _system(make_builtin_system, display, {"computer_use": "run"})
    _shot(system)
    box = system.stash("computer_use.sandbox", lambda: None)
    assert box is not None and box.backend == sandbox_for(system).backend != "none"
    assert box.settings.unix_sockets and not sandbox_for(system).settings.unix_sockets  # only the X clients
    socket = Path(f"/tmp/.X11-unix/X{display[1:]}")
    seen = box.run(["cat", str(secret)], workspace=str(workspace), network="off", read_only=[socket])
    assert seen.exit_code != 0 and "TOP-SECRET" not in seen.output
