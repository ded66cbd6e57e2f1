"""When runs are due (seed 001 "Расписание"): pure functions over settings, overrides and history.

The reconciliation window is a minute of week (0 = Monday 00:00) in the organisation's time zone;
croniter expands it to instants in that zone (DST-aware), which are then compared in UTC.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol
from zoneinfo import ZoneInfo

from croniter import croniter

WEEK = 7 * 24 * 3600
DAY_MINUTES = 1440


# A scheduled reconciliation that failed or was cancelled is retried, at most once per this long.
RECONCILE_RETRY_AFTER = timedelta(hours=1)
# A reconciliation started a little after its slot still counts for that slot: the next slot is due
# once ``reconcile_interval`` minus this grace has passed (half a day at most, half the interval below).
MAX_GRACE = timedelta(hours=12)


def window_cron(minute_of_week: int, reconcile_interval: int) -> str:
    """Cron of the window's slots: weekly at day+time when the cadence is a whole number of weeks,
    otherwise daily at the time (the interval then says how many daily slots apart runs are)."""
    day, minute_of_day = divmod(minute_of_week % (7 * DAY_MINUTES), DAY_MINUTES)
    hour, minute = divmod(minute_of_day, 60)
    if reconcile_interval < WEEK or reconcile_interval % WEEK:
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


def incremental_due(now: datetime, last_poll: datetime | None, interval: int) -> bool:
    """``last_poll``: the last whole-source poll (scheduled, watchdog, manual or full), never a webhook
    run: polling exists to pick up what webhooks do not send (seed 001 "Incremental")."""
    return last_poll is None or (now - last_poll).total_seconds() >= interval


def reconciliation_due(
    now: datetime,
    last_done: datetime | None,
    minute_of_week: int,
    reconcile_interval: int,
    tz: str,
    *,
    anchor: datetime | None = None,
    last_attempt: datetime | None = None,
) -> bool:
    """Is a scheduled reconciliation due at ``now`` (seed 001 "Reconciliation", "Расписание")?

    - ``last_done``: start of the last reconciliation that succeeded or is still active; a failed or
      cancelled one does not count for its slot.
    - ``anchor``: when the source got its first full sync (or was created); a source that never
      reconciled is due at the first window slot after it, never at once.
    - ``reconcile_interval`` is a real cadence: the next slot at least ``interval - grace`` after
      ``last_done`` (every N days at the window's time; whole weeks on the window's weekday).
    - ``last_attempt``: the last scheduled attempt in any state; after a failure the retry waits
      :data:`RECONCILE_RETRY_AFTER`.
    """
    slot = last_window(now, minute_of_week, reconcile_interval, tz)
    if last_done is not None:
        grace = min(MAX_GRACE, timedelta(seconds=reconcile_interval) / 2)
        if slot < last_done + timedelta(seconds=reconcile_interval) - grace:
            return False
    elif anchor is not None and slot <= anchor:
        return False
    if last_attempt is not None and (last_done is None or last_attempt > last_done):
        # The slot's attempt failed or was cancelled: retry, once per backoff.
        return slot > last_attempt or now - last_attempt >= RECONCILE_RETRY_AFTER
    return True


def first_full_due(now: datetime, created_at: datetime, last_poll: datetime | None, interval: int) -> bool:
    """A source whose first full sync never started gets it from ``/connect`` (seed 001 "Full Sync");
    the schedule starts it only if nobody connected the source within one polling interval."""
    since = max(created_at, last_poll) if last_poll is not None else created_at
    return (now - since).total_seconds() >= interval


def probe_due(now: datetime, last_probe_at: datetime | None, interval: int) -> bool:
    return last_probe_at is None or (now - last_probe_at).total_seconds() >= interval


def silent_too_long(now: datetime, last_success: datetime | None, silence: int) -> bool:
    return last_success is not None and (now - last_success).total_seconds() > silence


# ---------------------------------------------------------------- what the API shows (issue 14 §2)
# The API's "next due" times come from the predicates above, the ones the schedule tick calls, so the
# two cannot drift: a time is "next" when the predicate first turns true at it.


class ScheduleDefaults(Protocol):
    """The platform settings a source's NULL overrides inherit (app.settings.PlatformSettings)."""

    @property
    def sync_interval(self) -> int: ...
    @property
    def reconcile_interval(self) -> int: ...
    @property
    def reconcile_window(self) -> int: ...


@dataclass(frozen=True)
class Effective:
    """One schedule setting as a source sees it: its override, or the platform default it inherits."""

    value: int
    inherited: bool


@dataclass(frozen=True)
class EffectiveSchedule:
    sync_interval: Effective
    reconcile_interval: Effective
    reconcile_window: Effective  # minute of week


def effective_schedule(
    sync_interval: int | None,
    reconcile_interval: int | None,
    reconcile_window: int | None,
    defaults: ScheduleDefaults,
) -> EffectiveSchedule:
    """A source's overrides over the platform defaults: NULL inherits (seed 001 "Расписание")."""

    def pick(own: int | None, default: int) -> Effective:
        return Effective(default, True) if own is None else Effective(own, False)

    return EffectiveSchedule(
        pick(sync_interval, defaults.sync_interval),
        pick(reconcile_interval, defaults.reconcile_interval),
        pick(reconcile_window, defaults.reconcile_window),
    )


def next_poll_at(
    now: datetime, created_at: datetime, first_full: datetime | None, last_poll: datetime | None, interval: int
) -> datetime:
    """When the tick next starts a whole-source poll: the first full sync while none ran
    (:func:`first_full_due`), else the next incremental poll (:func:`incremental_due`)."""
    if first_full is None:
        since = max(created_at, last_poll) if last_poll is not None else created_at
        at = since + timedelta(seconds=interval)
        due = first_full_due(at, created_at, last_poll, interval)
    else:
        at = last_poll + timedelta(seconds=interval) if last_poll is not None else now
        due = incremental_due(at, last_poll, interval)
    assert due, "next_poll_at disagrees with the tick's predicate"
    return at  # in the past: overdue, started by the next tick


def next_reconciliation_at(
    now: datetime,
    last_done: datetime | None,
    minute_of_week: int,
    reconcile_interval: int,
    tz: str,
    *,
    anchor: datetime | None,
    last_attempt: datetime | None,
    horizon: int = 800,
) -> datetime | None:
    """The first instant from ``now`` at which :func:`reconciliation_due` holds (when it already
    holds: the slot it is overdue since); ``None`` beyond ``horizon`` window slots. Due only changes at
    a window slot or when a failed attempt's retry backoff ends, so those instants are the only
    candidates.
    """
    if anchor is None:
        return None  # no full sync yet: the tick starts that first, and it anchors the first window

    def due(at: datetime) -> bool:
        return reconciliation_due(
            at, last_done, minute_of_week, reconcile_interval, tz, anchor=anchor, last_attempt=last_attempt
        )

    if due(now):
        return last_window(now, minute_of_week, reconcile_interval, tz)  # overdue since this slot
    candidates: list[datetime] = []
    if last_attempt is not None and last_attempt + RECONCILE_RETRY_AFTER > now:
        candidates.append(last_attempt + RECONCILE_RETRY_AFTER)
    slot = now
    for _ in range(horizon):
        slot = next_window(slot, minute_of_week, reconcile_interval, tz)
        while candidates and candidates[0] < slot:
            retry = candidates.pop(0)
            if due(retry):
                return retry
        if due(slot):
            return slot
    return None
