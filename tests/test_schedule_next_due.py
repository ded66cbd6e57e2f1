"""The API's next due times (issue 14 §2) agree with the tick's predicates: the predicate is false just
before the promised instant and true at it, across weekly and daily cadences, DST and a failed attempt."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from app.schedule import (
    RECONCILE_RETRY_AFTER,
    effective_schedule,
    first_full_due,
    incremental_due,
    next_poll_at,
    next_reconciliation_at,
    reconciliation_due,
)


@dataclass(frozen=True)
class Defaults:
    sync_interval: int
    reconcile_interval: int
    reconcile_window: int


SUNDAY_0300 = 6 * 1440 + 180
WEEK = 604800
DAY = 86400
SECOND = timedelta(seconds=1)


def _due(at: datetime, **kw: object) -> bool:
    return reconciliation_due(at, **kw)  # type: ignore[arg-type]  # the test's keyword table


@pytest.mark.parametrize(
    ("now", "interval", "tz", "last_done", "last_attempt"),
    [
        # Weekly, reconciled last Sunday: next Sunday 03:00 Berlin (winter: 02:00 UTC).
        (datetime(2026, 11, 30, 10, tzinfo=UTC), WEEK, "Europe/Berlin", datetime(2026, 11, 29, 2, tzinfo=UTC), None),
        # Across the autumn DST change (2026-10-25): 03:00 local is 02:00 UTC after it.
        (datetime(2026, 10, 20, 12, tzinfo=UTC), WEEK, "Europe/Berlin", datetime(2026, 10, 18, 1, tzinfo=UTC), None),
        # Every two days at the window's time.
        (datetime(2026, 11, 30, 10, tzinfo=UTC), 2 * DAY, "UTC", datetime(2026, 11, 30, 3, tzinfo=UTC), None),
        # The slot's scheduled attempt failed 10 minutes ago: retried after the backoff, not at once.
        (
            datetime(2026, 11, 29, 3, 40, tzinfo=UTC),
            WEEK,
            "UTC",
            datetime(2026, 11, 22, 3, tzinfo=UTC),
            datetime(2026, 11, 29, 3, 30, tzinfo=UTC),
        ),
    ],
)
def test_next_reconciliation_is_the_first_instant_the_tick_would_start_it(
    now: datetime, interval: int, tz: str, last_done: datetime, last_attempt: datetime | None
) -> None:
    anchor = datetime(2026, 1, 5, tzinfo=UTC)
    kw = {
        "last_done": last_done,
        "minute_of_week": SUNDAY_0300,
        "reconcile_interval": interval,
        "tz": tz,
        "anchor": anchor,
        "last_attempt": last_attempt,
    }
    at = next_reconciliation_at(now, last_done, SUNDAY_0300, interval, tz, anchor=anchor, last_attempt=last_attempt)
    assert at is not None and at > now
    assert _due(at, **kw) and not _due(at - SECOND, **kw)
    if last_attempt is not None:
        assert at == last_attempt + RECONCILE_RETRY_AFTER


def test_an_overdue_reconciliation_reports_its_slot_and_none_before_the_first_full_sync() -> None:
    now = datetime(2026, 11, 30, 10, tzinfo=UTC)
    overdue = next_reconciliation_at(
        now,
        datetime(2026, 11, 1, tzinfo=UTC),
        SUNDAY_0300,
        WEEK,
        "UTC",
        anchor=now - timedelta(days=60),
        last_attempt=None,
    )
    assert overdue == datetime(2026, 11, 29, 3, tzinfo=UTC)
    assert next_reconciliation_at(now, None, SUNDAY_0300, WEEK, "UTC", anchor=None, last_attempt=None) is None


def test_next_poll_matches_the_first_full_and_incremental_predicates() -> None:
    now = datetime(2026, 11, 30, 10, tzinfo=UTC)
    created = now - timedelta(minutes=5)
    first = next_poll_at(now, created, None, None, 900)
    assert first == created + timedelta(seconds=900)
    assert first_full_due(first, created, None, 900) and not first_full_due(first - SECOND, created, None, 900)
    last_poll = now - timedelta(minutes=20)
    poll = next_poll_at(now, created, created, last_poll, 900)
    assert poll == last_poll + timedelta(seconds=900) and poll < now  # overdue: the next tick starts it
    assert incremental_due(poll, last_poll, 900) and not incremental_due(poll - SECOND, last_poll, 900)


def test_effective_schedule_marks_what_is_inherited() -> None:
    defaults = Defaults(sync_interval=900, reconcile_interval=WEEK, reconcile_window=SUNDAY_0300)
    plan = effective_schedule(600, None, None, defaults)
    assert (plan.sync_interval.value, plan.sync_interval.inherited) == (600, False)
    assert (plan.reconcile_interval.value, plan.reconcile_interval.inherited) == (WEEK, True)
    assert (plan.reconcile_window.value, plan.reconcile_window.inherited) == (SUNDAY_0300, True)
