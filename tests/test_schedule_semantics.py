"""Schedule semantics of seed 001 "Расписание" that the first version got wrong (issue 12, item 1)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.schedule import RECONCILE_RETRY_AFTER, first_full_due, last_window, reconciliation_due, window_cron

SUNDAY_0300 = 6 * 1440 + 180
DAY = 86400
WEEK = 7 * DAY
TZ = "UTC"


def test_a_new_source_is_not_reconciled_before_its_first_window_passes() -> None:
    created = datetime(2026, 11, 25, 10, tzinfo=UTC)  # a Wednesday
    thursday = datetime(2026, 11, 26, 10, tzinfo=UTC)
    monday = datetime(2026, 11, 30, 10, tzinfo=UTC)

    assert not reconciliation_due(thursday, None, SUNDAY_0300, WEEK, TZ, anchor=created)
    assert reconciliation_due(monday, None, SUNDAY_0300, WEEK, TZ, anchor=created)


def test_the_first_full_sync_is_left_to_connect_for_one_polling_interval() -> None:
    created = datetime(2026, 11, 30, 10, tzinfo=UTC)

    assert not first_full_due(created + timedelta(minutes=5), created, None, 900)
    assert first_full_due(created + timedelta(minutes=15), created, None, 900)
    # A first full that failed is retried once per polling interval, not at every tick.
    failed_at = created + timedelta(minutes=15)
    assert not first_full_due(failed_at + timedelta(minutes=1), created, failed_at, 900)


def test_reconcile_interval_of_three_days_runs_every_third_window_day() -> None:
    interval = 3 * DAY
    assert window_cron(SUNDAY_0300, interval) == "0 3 * * *"
    done = datetime(2026, 11, 23, 3, 0, 20, tzinfo=UTC)
    due = [
        day
        for day in range(1, 10)
        if reconciliation_due(done + timedelta(days=day, hours=1), done, SUNDAY_0300, interval, TZ)
    ]

    assert due[0] == 3 and all(d >= 3 for d in due)
    # An interval that is not whole weeks (10 days) also uses daily slots, ten of them apart.
    assert not reconciliation_due(done + timedelta(days=7, hours=1), done, SUNDAY_0300, 10 * DAY, TZ)
    assert reconciliation_due(done + timedelta(days=10, hours=1), done, SUNDAY_0300, 10 * DAY, TZ)


def test_two_week_interval_skips_one_sunday() -> None:
    done = datetime(2026, 11, 1, 3, 1, tzinfo=UTC)  # a Sunday window

    assert not reconciliation_due(datetime(2026, 11, 9, tzinfo=UTC), done, SUNDAY_0300, 2 * WEEK, TZ)
    assert reconciliation_due(datetime(2026, 11, 16, tzinfo=UTC), done, SUNDAY_0300, 2 * WEEK, TZ)


def test_a_failed_scheduled_reconciliation_is_retried_once_per_backoff() -> None:
    now = datetime(2026, 11, 29, 3, 30, tzinfo=UTC)
    slot = last_window(now, SUNDAY_0300, WEEK, TZ)
    previous = slot - timedelta(days=7)
    failed = slot + timedelta(minutes=1)

    # The failed attempt is not "done": the slot is still owed.
    assert not reconciliation_due(failed + timedelta(minutes=1), previous, SUNDAY_0300, WEEK, TZ, last_attempt=failed)
    assert reconciliation_due(
        failed + RECONCILE_RETRY_AFTER, previous, SUNDAY_0300, WEEK, TZ, last_attempt=failed
    )
