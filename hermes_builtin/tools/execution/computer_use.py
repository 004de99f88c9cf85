"""``computer_use``: screenshots, pointer and keyboard on an X display (a desktop, or an Xvfb a host started).

Each action is one xdotool (or, for a screenshot, one ffmpeg x11grab) run in the sandbox with no network
(``_xdisplay``). A screenshot comes back as an image attachment (and a file under the data dir); the other
actions answer with what they did. Every action but ``screenshot`` and ``move`` asks a human first unless
``[approvals] computer_use = "run"``; the approval binds to the exact action. Hidden, with the reason, when no
local display is reachable or xdotool/ffmpeg are missing; opt-in: enable the ``computer_use`` toolset.

```toml
[plugins.computer_use]
display = ":99"          # default: $DISPLAY
xauthority = "~/.Xauthority"   # default: $XAUTHORITY (servers without access control need none)
timeout = 15             # seconds per action
```
"""

from __future__ import annotations

import re
from typing import Any

from hermes_core import CallContext, ToolError, ToolRegistry, Unavailable

TOOLSET = "computer_use"
ACTIONS = ("screenshot", "move", "click", "double_click", "right_click", "type", "key", "scroll")
MAX_TEXT = 5000
_SCROLL_BUTTON = {"up": 4, "down": 5, "left": 6, "right": 7}
_KEY = re.compile(r"^[A-Za-z0-9_]{1,32}(?:\+[A-Za-z0-9_]{1,32}){0,4}$")
# xdotool reads a word that names one of its commands as the start of a chained command (``key a exec sh``
# would run sh): no key may be spelled like one.
_XDOTOOL_COMMANDS = frozenset(
    [
        "behave",
        "behave_screen_edge",
        "click",
        "exec",
        "get_desktop",
        "get_desktop_for_window",
        "get_desktop_viewport",
        "get_num_desktops",
        "getactivewindow",
        "getdisplaygeometry",
        "getmouselocation",
        "getwindowfocus",
        "getwindowgeometry",
        "getwindowname",
        "getwindowpid",
        "help",
        "key",
        "keydown",
        "keyup",
        "mousedown",
        "mousemove",
        "mousemove_relative",
        "mouseup",
        "search",
        "selectwindow",
        "set_desktop",
        "set_desktop_for_window",
        "set_desktop_viewport",
        "set_num_desktops",
        "set_window",
        "sleep",
        "type",
        "version",
        "windowactivate",
        "windowclose",
        "windowfocus",
        "windowkill",
        "windowmap",
        "windowminimize",
        "windowmove",
        "windowquit",
        "windowraise",
        "windowreparent",
        "windowsize",
        "windowstate",
        "windowunmap",
    ]
)

SCHEMA: dict[str, Any] = {
    "name": "computer_use",
    "description": (
        "Use the desktop: screenshot (returns the image), move the pointer, click, double_click, right_click, "
        "type text, key (xdotool names: Return, ctrl+c, alt+Tab), scroll. x and y are pixels of the screenshot."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(ACTIONS)},
            "x": {"type": "integer", "minimum": 0},
            "y": {"type": "integer", "minimum": 0},
            "text": {"type": "string", "description": "For type."},
            "keys": {"type": "string", "description": "For key; several separated by spaces."},
            "direction": {"type": "string", "enum": list(_SCROLL_BUTTON), "description": "For scroll."},
            "amount": {"type": "integer", "minimum": 1, "maximum": 20, "description": "Scroll steps (3)."},
        },
        "required": ["action"],
        "additionalProperties": False,
    },
}


def _size(png: bytes) -> str:
    if png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) >= 24:
        return f"{int.from_bytes(png[16:20], 'big')}x{int.from_bytes(png[20:24], 'big')}"
    return "unknown size"


def _screenshot(context: CallContext, display: Any) -> Any:
    import shutil
    import tempfile
    from pathlib import Path

    from hermes_core import Attachment, ToolOutput
    from hermes_core.fileio import atomic_write

    from ._xdisplay import run_client

    folder = Path(tempfile.mkdtemp(prefix="hermes-screen-"))
    try:
        run_client(
            context,
            display,
            ["ffmpeg", "-v", "error", "-nostdin", "-f", "x11grab", "-i", display.name, "-frames:v", "1",
             "-f", "image2", "-c:v", "png", str(folder / "screen.png")],
            read_write=[folder],
        )  # fmt: skip
        shot = folder / "screen.png"
        if not shot.is_file() or not shot.stat().st_size:
            raise ToolError(f"ffmpeg took no screenshot of {display.name}")
        image = shot.read_bytes()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    path = context.data_dir / "computer_use" / "screenshots" / f"{context.call_id or 'latest'}.png"
    atomic_write(path, image, fsync=False)
    text = f"Screenshot of display {display.name} ({_size(image)}), attached and saved to {path}."
    return ToolOutput(text, (Attachment("image/png", image, kind="image", name=path.name),))


def _point(x: int | None, y: int | None, action: str, *, required: bool) -> list[str]:
    if x is None and y is None and not required:
        return []
    if x is None or y is None:
        raise ToolError(f"{action} needs both x and y (pixels of the screenshot)")
    return ["mousemove", "--sync", str(x), str(y)]


def _keys(keys: str | None) -> list[str]:
    tokens = (keys or "").split()
    if not tokens:
        raise ToolError("key needs keys, e.g. Return, ctrl+c or alt+Tab (several separated by spaces)")
    for token in tokens:
        if not _KEY.match(token) or token.lower() in _XDOTOOL_COMMANDS:
            raise ToolError(
                f"{token!r} is not a key name: use X key names joined by +, e.g. Return, ctrl+shift+t, F5"
            )
    return tokens


def _plan(
    action: str,
    x: int | None,
    y: int | None,
    text: str | None,
    keys: str | None,
    direction: str | None,
    amount: int | None,
) -> tuple[list[str], str, str]:
    """The xdotool arguments of an action, what it is (for the approval) and what it did (for the model)."""
    at = f" at ({x}, {y})" if x is not None and y is not None else " at the pointer"
    if action == "move":
        return _point(x, y, action, required=True), "", f"Moved the pointer to ({x}, {y})."
    if action in ("click", "double_click", "right_click"):
        button = "3" if action == "right_click" else "1"
        repeat = ["--repeat", "2", "--delay", "80"] if action == "double_click" else []
        verb = action.replace("_", "-")
        argv = [*_point(x, y, action, required=False), "click", *repeat, button]
        return argv, f"{verb}{at}", f"{verb.capitalize()}ed{at}."
    if action == "type":
        if not text:
            raise ToolError("type needs text")
        if len(text) > MAX_TEXT:
            raise ToolError(f"text is {len(text):,} characters; type at most {MAX_TEXT:,} at a time")
        shown = text if len(text) <= 500 else text[:500] + "..."
        return ["type", "--delay", "12", "--", text], f"type {shown!r}", f"Typed {len(text)} characters."
    if action == "key":
        tokens = _keys(keys)
        pressed = " ".join(tokens)
        return ["key", "--delay", "40", "--", *tokens], f"press {pressed}", f"Pressed {pressed}."
    if action == "scroll":
        if direction is None:
            raise ToolError("scroll needs a direction: up, down, left or right")
        steps = amount or 3
        argv = [*_point(x, y, action, required=False), "click", "--repeat", str(steps), "--delay", "40"]
        said = f"{direction} {steps} step(s){at}"
        return [*argv, str(_SCROLL_BUTTON[direction])], f"scroll {said}", f"Scrolled {said}."
    raise ToolError(f"unknown action {action!r}; use one of {', '.join(ACTIONS)}")


def computer_use(
    action: str,
    x: int | None = None,
    y: int | None = None,
    text: str | None = None,
    keys: str | None = None,
    direction: str | None = None,
    amount: int | None = None,
    *,
    context: CallContext,
) -> Any:
    """Do one action on the display (see ``SCHEMA`` and the module docstring)."""
    from .. import _approvals
    from ._xdisplay import SECTION, DisplayProblem, display_of, run_client

    try:
        display = display_of(context.plugin_config(SECTION))
    except DisplayProblem as problem:
        raise ToolError(str(problem), retryable=False) from None
    if action == "screenshot":
        return _screenshot(context, display)
    argv, asking, done = _plan(action, x, y, text, keys, direction, amount)
    if asking:  # everything but move
        subject = f"computer_use {' '.join(argv)} on {display.name}"
        _approvals.ask_first(context, "computer_use", subject, f"{asking} on the desktop {display.name}")
    run_client(context, display, ["xdotool", *argv])
    return done


def check(system: Any) -> tuple[bool, str] | Unavailable:
    """``_xdisplay.check``, imported when the check first runs rather than at load."""
    from ._xdisplay import check as display_check

    return display_check(system)


def register(registry: ToolRegistry) -> None:
    """Register ``computer_use`` (toolset "computer_use")."""
    registry.register(
        name="computer_use",
        toolset=TOOLSET,
        schema=SCHEMA,
        handler=computer_use,
        check_fn=check,
        emoji="🖱️",
        max_result_size_chars=4000,
    )
