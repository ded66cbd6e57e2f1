"""The tick (cron HARVESTER_TICK_CRON, every minute by default; registered in app.jobs.build_app):
schedule incremental and reconciliation runs, probe sources, watchdog, resume stale runs, reap orphans
(seed 001). A run whose worker died is found by its stale heartbeat and re-deferred; a queued run no
job will ever run is failed with the reason, so its source is not blocked (issue 10); webhook items no job
will take (it broke) get a new apply_webhook job (decision 145)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import procrastinate
import psycopg

from app.config import load_config
from app.db.connect import connect
from app.jobs.common import PERIODIC_QUEUE, db_url
from app.queries import runs as rq
from app.queries import sources as sq
from app.queries import webhooks as wq
from app.schedule import (
    effective_schedule,
    first_full_due,
    incremental_due,
    probe_due,
    reconciliation_due,
    silent_too_long,
)
from app.secrets import Keyring, load_keyring
from app.services.alerts import evaluate_alerts
from app.services.connectors import has_delta, probe
from app.services.jobs import APPLY_WEBHOOK, RUN_SYNC, defer_in
from app.services.sources import RunConflict, start_run
from app.settings import PlatformSettings, load_settings

log = logging.getLogger(__name__)

blueprint = procrastinate.Blueprint()

# A queued run younger than this is never reaped: every path commits a run with its job, the grace only
# spares a writer that (against the rule) commits the run a moment before its job.
ORPHAN_GRACE = 30
ORPHAN_REASONS = {
    "missing": "no job was ever queued for it",
    "doing": "the worker running its job died before it claimed the run",
}


@blueprint.task(name="tick", queue=PERIODIC_QUEUE, queueing_lock="tick")
def tick(timestamp: int) -> dict[str, int]:
    """Schedule incremental and reconciliation runs, probe, watchdog, resume stale runs, reap orphans."""

    def defer(conn: Any, run_id: int) -> None:
        defer_in(conn, RUN_SYNC, run_id=run_id)

    return tick_once(datetime.fromtimestamp(timestamp, UTC), defer=defer)


def tick_once(now: datetime, *, defer: Callable[[Any, int], None]) -> dict[str, int]:
    """One tick. ``defer(conn, run_id)`` queues a run's job in ``conn``'s open transaction, so a run
    never commits without its job (a crash in between would leave it queued forever)."""
    counts = {
        "full": 0,
        "incremental": 0,
        "reconciliation": 0,
        "probed": 0,
        "watchdog": 0,
        "resumed": 0,
        "gave_up": 0,
        "reaped": 0,
        "webhooks_rearmed": 0,
    }
    config = load_config()
    keyring = load_keyring(config)
    with connect(db_url()) as conn:
        settings = load_settings(conn)
        # Past stale_run_after + takeover_grace only: before that, ClaimRun would refuse the takeover.
        takeover_after = settings.stale_run_after + settings.takeover_grace
        for stale in rq.list_stale_runs(conn, stale_after=takeover_after):
            if stale.deliveries >= settings.max_deliveries:
                rq.fail_run(
                    conn,
                    id=stale.id,
                    error_detail=f"gave up: the worker died {stale.deliveries} times (max_deliveries)",
                )
                counts["gave_up"] += 1
            else:
                defer(conn, stale.id)
                counts["resumed"] += 1
        for orphan in rq.list_orphaned_runs(conn, grace=ORPHAN_GRACE):
            reason = ORPHAN_REASONS.get(
                orphan.last_status, f"its job ended {orphan.last_status} before the run started"
            )
            counts["reaped"] += rq.fail_run(conn, id=orphan.id, error_detail=f"orphaned: {reason}")
        for source_id in wq.list_unarmed_webhook_sources(conn, grace=ORPHAN_GRACE):
            defer_in(conn, APPLY_WEBHOOK, source_id=source_id)
            counts["webhooks_rearmed"] += 1
            log.warning("tick: source %s had webhook items pending and no job to take them; deferred one", source_id)
        conn.commit()
        for s in sq.list_schedule_state(conn):
            try:
                _schedule_source(conn, s, now, settings, keyring, defer, counts)
            except Exception:
                # One broken source (an undecryptable credential, a connector bug) must not stop the
                # schedule of the others; it is logged every tick until fixed.
                conn.rollback()
                log.exception("tick: scheduling source %s failed", s.id)
        # Alerts (issue 10 §4): open/resolve incidents and queue their notifications, once a tick.
        counts.update({f"alerts_{k}": v for k, v in evaluate_alerts(conn, now).items()})
        conn.commit()
    return counts


def _schedule_source(
    conn: psycopg.Connection[Any],
    s: sq.ListScheduleStateRow,
    now: datetime,
    settings: PlatformSettings,
    keyring: Keyring,
    defer: Callable[[Any, int], None],
    counts: dict[str, int],
) -> None:
    def start(mode: str, trigger: str) -> bool:
        try:
            run_id = start_run(conn, s.id, mode=mode, trigger=trigger)
        except RunConflict:
            conn.rollback()
            return False
        defer(conn, run_id)
        conn.commit()
        return True

    # The same resolution the API shows as a source's effective schedule (app/api/views.py).
    plan = effective_schedule(s.sync_interval, s.reconcile_interval, s.reconcile_window, settings)
    interval = plan.reconcile_interval.value
    window = plan.reconcile_window.value
    poll_every = plan.sync_interval.value
    if s.first_full is None:
        # Seed 001: the first run is the full sync on connect; the tick starts it only when nobody did.
        if first_full_due(now, s.created_at, s.last_poll, poll_every):
            counts["full"] += start("full", "schedule")
    elif reconciliation_due(
        now,
        s.last_reconciliation,
        window,
        interval,
        settings.timezone,
        anchor=s.first_full,
        last_attempt=s.last_reconciliation_attempt,
    ):
        counts["reconciliation"] += start("reconciliation", "schedule")
    elif incremental_due(now, s.last_poll, poll_every):
        counts["incremental"] += start("incremental", "schedule")
    source = sq.get_source(conn, id=s.id)
    conn.commit()
    if source is None:
        return
    if probe_due(now, s.last_probe_at, settings.probe_interval):
        counts["probed"] += 1
        probe(conn, source, keyring)
        conn.commit()
    if s.webhook_enabled and silent_too_long(now, s.last_success, settings.watchdog_silence):
        # One watchdog run per silence episode, and only when the cheap probe finds a delta.
        fresh_episode = s.last_watchdog is None or s.last_watchdog < s.last_success
        if fresh_episode and has_delta(source, keyring):
            counts["watchdog"] += start("incremental", "watchdog")
