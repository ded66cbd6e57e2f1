"""When runs are due (seed 001 "Расписание"): pure functions over settings, overrides and history.

The reconciliation window is a minute of week (0 = Monday 00:00) in the organisation's time zone;
croniter expands it to instants in that zone (DST-aware), which are then compared in UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import croniter

WEEK = 7 * 24 * 3600
DAY_MINUTES = 1440


def window_cron(minute_of_week: int, reconcile_interval: int) -> str:
    """Cron for the window: weekly at day+time, or daily at the time when the cadence is daily or shorter."""
    day, minute_of_day = divmod(minute_of_week % (7 * DAY_MINUTES), DAY_MINUTES)
    hour, minute = divmod(minute_of_day, 60)
    if reconcile_interval < WEEK:
        return f"{minute} {hour} * * *"
    cron_dow = (day + 1) % 7  # ISO Monday=0 here; cron Sunday=0, Monday=1
    return f"{minute} {hour} * * {cron_dow}"


def last_window(now: datetime, minute_of_week: int, reconcile_interval: int, tz: str) -> datetime:
    """The latest window instant at or before ``now`` (UTC)."""
    local_now = now.astimezone(ZoneInfo(tz))
    it = croniter(window_cron(minute_of_week, reconcile_interval), local_now + timedelta(seconds=1))
    prev: datetime = it.get_prev(datetime)
    return prev.astimezone(UTC)


def next_window(now: datetime, minute_of_week: int, reconcile_interval: int, tz: str) -> datetime:
    local_now = now.astimezone(ZoneInfo(tz))
    nxt: datetime = croniter(window_cron(minute_of_week, reconcile_interval), local_now).get_next(datetime)
    return nxt.astimezone(UTC)


def incremental_due(now: datetime, last_created: datetime | None, interval: int) -> bool:
    return last_created is None or (now - last_created).total_seconds() >= interval


def reconciliation_due(
    now: datetime, last_created: datetime | None, minute_of_week: int, reconcile_interval: int, tz: str
) -> bool:
    """Due once per window: the window has passed since the last reconciliation was started."""
    window = last_window(now, minute_of_week, reconcile_interval, tz)
    return last_created is None or last_created < window


def probe_due(now: datetime, last_probe_at: datetime | None, interval: int) -> bool:
    return last_probe_at is None or (now - last_probe_at).total_seconds() >= interval


def silent_too_long(now: datetime, last_success: datetime | None, silence: int) -> bool:
    return last_success is not None and (now - last_success).total_seconds() > silence
