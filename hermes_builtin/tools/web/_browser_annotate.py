"""Screenshots with the snapshot's refs drawn on them (``browser_vision`` with ``annotate``).

A fresh snapshot gives the interactive elements (buttons, links, fields...) and their refs; each gets a box
around it and a label with its ref (``e12``), drawn as an overlay in the element's own document (frames too),
so a vision model can name the ref that ``browser_click`` and ``browser_type`` take. The overlay is removed
right after the screenshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from dataclasses import dataclass
from typing import Any

from . import _browser_actions as act
from ._browser_engine import BrowserSession

COLOR = "#ff00ff"  # one colour that rarely occurs on pages: the boxes and the labels' background
MAX_BOXES = 80
INTERACTIVE_ROLES = frozenset(
    {
        *("button", "link", "textbox", "searchbox", "checkbox", "radio", "combobox", "listbox", "option"),
        *("menuitem", "menuitemcheckbox", "menuitemradio", "tab", "switch", "slider", "spinbutton"),
        "treeitem",
    }
)
_LINE = re.compile(
    r'^\s*- (?P<role>[a-z]+)(?: "(?P<name>(?:[^"\\]|\\.)*)")?[^\n]*?\[ref=(?P<ref>[a-z0-9]+)\]'
)
_MARK = "data-hermes-annotation"

_DRAW_JS = """(el, [ref, color, mark]) => {
  const r = el.getBoundingClientRect();
  if (r.width < 1 || r.height < 1) return null;
  const doc = el.ownerDocument, win = doc.defaultView;
  const box = doc.createElement('div');
  box.setAttribute(mark, '');
  box.style.cssText = 'position:absolute;pointer-events:none;z-index:2147483647;box-sizing:border-box;' +
    `left:${r.left + win.scrollX}px;top:${r.top + win.scrollY}px;width:${r.width}px;height:${r.height}px;` +
    `border:2px solid ${color};`;
  const label = doc.createElement('div');
  label.setAttribute(mark, '');
  label.textContent = ref;
  const above = r.top >= 14;
  label.style.cssText = 'position:absolute;pointer-events:none;z-index:2147483647;' +
    `left:${r.left + win.scrollX}px;top:${r.top + win.scrollY + (above ? -14 : 0)}px;` +
    `background:${color};color:#fff;font:bold 11px/14px monospace;padding:0 3px;`;
  (doc.body || doc.documentElement).append(box, label);
  const inView = r.bottom > 0 && r.right > 0 && r.top < win.innerHeight && r.left < win.innerWidth;
  return {inView};
}"""
_CLEAR_JS = f"() => document.querySelectorAll('[{_MARK}]').forEach(e => e.remove())"


@dataclass(frozen=True)
class Target:
    ref: str
    role: str
    name: str

    def __str__(self) -> str:
        return f'{self.ref} {self.role} "{self.name}"' if self.name else f"{self.ref} {self.role}"


def interactive(snapshot: str) -> list[Target]:
    """The interactive elements of an AI snapshot, in page order."""
    found: list[Target] = []
    for line in snapshot.splitlines():
        match = _LINE.match(line)
        if match and match["role"] in INTERACTIVE_ROLES:
            found.append(Target(match["ref"], match["role"], match["name"] or ""))
    return found


async def _draw(page: Any, target: Target) -> str:
    """Draw one box: "in" (it shows in the viewport), "out" (drawn elsewhere on the page) or "" (not drawn)."""
    try:
        drawn = await page.get_by_ref(target.ref).evaluate(_DRAW_JS, [target.ref, COLOR, _MARK], timeout=2000)
    except Exception:
        return ""  # gone, hidden or detached since the snapshot
    if not drawn:
        return ""
    return "in" if drawn.get("inView") else "out"


async def _clear(page: Any) -> None:
    for frame in page.frames:
        with contextlib.suppress(Exception):
            await frame.evaluate(_CLEAR_JS)


async def screenshot(session: BrowserSession, full_page: bool) -> tuple[bytes, list[Target]]:
    """A screenshot with the interactive elements boxed and labelled, and the elements drawn (in view)."""
    await act.take_snapshot(session)
    targets = interactive(session.last_snapshot)[:MAX_BOXES]
    page = await session.current_page()
    try:
        shown = await asyncio.gather(*(_draw(page, t) for t in targets))
        image = await act.screenshot(session, full_page)
    finally:
        await _clear(page)
    drawn = [t for t, where in zip(targets, shown, strict=True) if where == "in" or (where and full_page)]
    return image, drawn
