"""The minute tick: schedule incremental and reconciliation runs, probe sources, watchdog, resume
stale runs (seed 001). A run whose worker died is found by its stale heartbeat and re-deferred."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import procrastinate

from app.config import load_config
from app.db.connect import connect
from app.jobs.common import PERIODIC_QUEUE, db_url
from app.jobs.sync import run_sync
from app.queries import runs as rq
from app.queries import sources as sq
from app.schedule import incremental_due, probe_due, reconciliation_due, silent_too_long
from app.secrets import load_keyring
from app.services.connectors import has_delta, probe
from app.services.jobs import defer_in
from app.services.sources import RunConflict, start_run
from app.settings import load_settings

blueprint = procrastinate.Blueprint()


@blueprint.periodic(cron="* * * * *")
@blueprint.task(name="tick", queue=PERIODIC_QUEUE, queueing_lock="tick")
def tick(timestamp: int) -> dict[str, int]:
    """Schedule incremental and reconciliation runs, probe, watchdog, resume stale runs."""
    jobs = run_sync.blueprint
    assert isinstance(jobs, procrastinate.App)  # the blueprint was added to the worker's app

    def defer(conn: Any, run_id: int) -> None:
        defer_in(conn, jobs, "harvester:run_sync", run_id=run_id)

    return tick_once(datetime.fromtimestamp(timestamp, UTC), defer=defer)


def tick_once(now: datetime, *, defer: Callable[[Any, int], None]) -> dict[str, int]:
    """One tick. ``defer(conn, run_id)`` queues a run's job in ``conn``'s open transaction, so a run
    never commits without its job (a crash in between would leave it queued forever)."""
    counts = {"incremental": 0, "reconciliation": 0, "probed": 0, "watchdog": 0, "resumed": 0, "gave_up": 0}
    keyring = load_keyring(load_config())
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
        conn.commit()
        for s in sq.list_schedule_state(conn):

            def start(mode: str, trigger: str, source_id: int = s.id) -> bool:
                try:
                    run_id = start_run(conn, source_id, mode=mode, trigger=trigger)
                except RunConflict:
                    conn.rollback()
                    return False
                defer(conn, run_id)
                conn.commit()
                return True

            interval = s.reconcile_interval or settings.reconcile_interval
            window = s.reconcile_window if s.reconcile_window is not None else settings.reconcile_window
            if reconciliation_due(now, s.last_reconciliation, window, interval, settings.timezone):
                counts["reconciliation"] += start("reconciliation", "schedule")
            elif incremental_due(now, s.last_incremental, s.sync_interval or settings.sync_interval):
                counts["incremental"] += start("incremental", "schedule")
            source = sq.get_source(conn, id=s.id)
            conn.commit()
            if source is None:
                continue
            if probe_due(now, s.last_probe_at, settings.probe_interval):
                counts["probed"] += 1
                probe(conn, source, keyring)
                conn.commit()
            if s.webhook_enabled and silent_too_long(now, s.last_success, settings.watchdog_silence):
                # One watchdog run per silence episode, and only when the cheap probe finds a delta.
                fresh_episode = s.last_watchdog is None or s.last_watchdog < s.last_success
                if fresh_episode and has_delta(source, keyring):
                    counts["watchdog"] += start("incremental", "watchdog")
    return counts
