"""Schedules and their slots: ``every:<N><s|m|h|d>`` (a fixed grid from the job's anchor) or ``cron:<expr>`` (UTC).

A slot is the UNIX second a run is due at. Slots are what make runs happen once: the store keeps one run per
``(job, slot)``, so however many schedulers look at a job, a slot is claimed by one of them.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

__all__ = ["MIN_INTERVAL", "ScheduleError", "count_slots", "latest_slot", "next_slot", "parse_schedule"]

MIN_INTERVAL = 60
MAX_INTERVAL = 366 * 86_400
_EVERY = re.compile(r"^every:\s*(\d{1,9})\s*([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
_MAX_COUNT = 100_000
_MAX_CRON_COUNT = 1_000  # counting cron slots walks them one by one


class ScheduleError(ValueError):
    """A schedule string that cannot be used; the message says what to write instead."""


def parse_schedule(schedule: str, *, min_interval: int = MIN_INTERVAL) -> str:
    """The normalized schedule string (``every:15m``, ``cron:0 9 * * 1-5``); raises ``ScheduleError``."""
    text = " ".join(schedule.split())
    every = _EVERY.match(text)
    if every:
        seconds = int(every.group(1)) * _UNITS[every.group(2)]
        if not min_interval <= seconds <= MAX_INTERVAL:
            low = "1 minute" if min_interval == 60 else f"{min_interval} s"
            raise ScheduleError(f"interval {text!r} must be between {low} and 366 days")
        return f"every:{every.group(1)}{every.group(2)}"
    expr = text[5:].strip() if text.startswith("cron:") else text
    if expr.startswith("every"):
        raise ScheduleError(f"bad interval {text!r}; write e.g. every:15m, every:2h or every:1d")
    from croniter import croniter

    if not (expr.startswith("@") or len(expr.split()) == 5) or not croniter.is_valid(expr):
        raise ScheduleError(
            f"bad schedule {text!r}; use every:<N><s|m|h|d> or cron:<minute hour day month weekday>, "
            "e.g. cron:*/15 * * * *"
        )
    return f"cron:{expr}"


def _period(schedule: str) -> int:
    spec = schedule[6:]
    return int(spec[:-1]) * _UNITS[spec[-1]]


def next_slot(schedule: str, anchor: int, after: float) -> int:
    """The first slot strictly after ``after`` (``every:`` slots are ``anchor + k * period``, k >= 1)."""
    if schedule.startswith("every:"):
        period = _period(schedule)
        if after < anchor:
            return anchor + period
        return anchor + (int((after - anchor) // period) + 1) * period
    from croniter import croniter

    start = datetime.fromtimestamp(int(after), tz=UTC)
    nxt: datetime = croniter(schedule[5:], start).get_next(datetime)
    return int(nxt.timestamp())


def latest_slot(schedule: str, anchor: int, now: float) -> int | None:
    """The last slot at or before ``now`` and after ``anchor`` (None when there is none yet)."""
    if schedule.startswith("every:"):
        period = _period(schedule)
        if now < anchor + period:
            return None
        return anchor + int((now - anchor) // period) * period
    from croniter import croniter

    start = datetime.fromtimestamp(int(now) + 1, tz=UTC)  # get_prev is strict: a slot at `now` counts
    prev: datetime = croniter(schedule[5:], start).get_prev(datetime)
    slot = int(prev.timestamp())
    return slot if slot > anchor else None


def count_slots(schedule: str, anchor: int, after: int, upto: int) -> int:
    """How many slots lie in ``(after, upto]`` (capped: 100,000 intervals, 1,000 cron slots): the runs a catch-up
    stands for."""
    if upto <= after:
        return 0
    if schedule.startswith("every:"):
        period = _period(schedule)
        first = next_slot(schedule, anchor, after)
        return 0 if first > upto else min(_MAX_COUNT, (upto - first) // period + 1)
    from croniter import croniter

    it = croniter(schedule[5:], datetime.fromtimestamp(after, tz=UTC))
    count = 0
    while count < _MAX_CRON_COUNT:
        nxt: datetime = it.get_next(datetime)
        if nxt.timestamp() > upto:
            break
        count += 1
    return count
