"""Schedule math (seed 001 "Расписание"): windows in the organisation's time zone, across DST."""

from __future__ import annotations

from datetime import UTC, datetime

from app.schedule import (
    incremental_due,
    last_window,
    next_window,
    reconciliation_due,
    silent_too_long,
    window_cron,
)

SUNDAY_0300 = 6 * 1440 + 180
WEEK = 604800


def test_default_window_is_sunday_0300_as_cron() -> None:
    assert window_cron(SUNDAY_0300, WEEK) == "0 3 * * 0"
    assert window_cron(0, WEEK) == "0 0 * * 1"  # minute 0 is Monday 00:00


def test_daily_cadence_uses_the_minute_of_day_only() -> None:
    assert window_cron(SUNDAY_0300 + 30, 86400) == "30 3 * * *"


def test_window_keeps_local_0300_before_and_after_the_autumn_dst_change() -> None:
    # Europe/Berlin leaves summer time on Sunday 2026-10-25 at 03:00 local.
    before = next_window(datetime(2026, 10, 12, tzinfo=UTC), SUNDAY_0300, WEEK, "Europe/Berlin")
    after = next_window(datetime(2026, 10, 26, tzinfo=UTC), SUNDAY_0300, WEEK, "Europe/Berlin")

    assert before == datetime(2026, 10, 18, 1, 0, tzinfo=UTC)  # 03:00 CEST = 01:00 UTC
    assert after == datetime(2026, 11, 1, 2, 0, tzinfo=UTC)  # 03:00 CET = 02:00 UTC


def test_window_on_the_spring_forward_night_fires_once_at_a_real_instant() -> None:
    # America/New_York skips 02:00-03:00 on Sunday 2026-03-08; a 02:30 window must still fire once.
    minute = 6 * 1440 + 150
    nxt = next_window(datetime(2026, 3, 7, 12, tzinfo=UTC), minute, WEEK, "America/New_York")

    assert datetime(2026, 3, 8, 6, tzinfo=UTC) <= nxt <= datetime(2026, 3, 8, 8, tzinfo=UTC)
    assert not reconciliation_due(nxt.replace(minute=nxt.minute) , nxt, minute, WEEK, "America/New_York")


def test_reconciliation_is_due_once_per_window() -> None:
    tz = "Asia/Tokyo"
    window = last_window(datetime(2026, 11, 30, tzinfo=UTC), SUNDAY_0300, WEEK, tz)
    just_after = window.replace(minute=5)

    assert reconciliation_due(just_after, None, SUNDAY_0300, WEEK, tz)
    assert reconciliation_due(just_after, datetime(2026, 11, 20, tzinfo=UTC), SUNDAY_0300, WEEK, tz)
    assert not reconciliation_due(just_after, window.replace(minute=1), SUNDAY_0300, WEEK, tz)


def test_window_instant_does_not_depend_on_the_server_time_zone() -> None:
    now = datetime(2026, 11, 30, 12, tzinfo=UTC)
    assert last_window(now, SUNDAY_0300, WEEK, "UTC") == datetime(2026, 11, 29, 3, tzinfo=UTC)
    assert last_window(now, SUNDAY_0300, WEEK, "Europe/Moscow") == datetime(2026, 11, 29, 0, tzinfo=UTC)


def test_incremental_interval_and_watchdog_silence() -> None:
    now = datetime(2026, 11, 30, 12, tzinfo=UTC)
    assert incremental_due(now, None, 900)
    assert incremental_due(now, datetime(2026, 11, 30, 11, 45, tzinfo=UTC), 900)
    assert not incremental_due(now, datetime(2026, 11, 30, 11, 50, tzinfo=UTC), 900)
    assert silent_too_long(now, datetime(2026, 11, 29, 23, 59, tzinfo=UTC), 43200)
    assert not silent_too_long(now, datetime(2026, 11, 30, 0, 1, tzinfo=UTC), 43200)
    assert not silent_too_long(now, None, 43200)
