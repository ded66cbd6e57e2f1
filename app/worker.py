"""Procrastinate worker: every sync run is a job; a periodic tick schedules, probes and watches.

Jobs carry only a run id; the run row is the truth. One active run per source is the database's
partial unique index, not anything here. A run whose worker died is found by its stale heartbeat
and re-deferred; ClaimRun lets the new worker take it over and the run resumes from its checkpoint.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import procrastinate
from procrastinate import RetryStrategy

from app.config import load_config
from app.db.connect import WORKER_ROLE, assume_role, connect, database_url
from app.db.migrate import migrate
from app.jobs import alerts as alert_jobs
from app.pipeline.run import LaneBusy, execute_run, source_config
from app.queries import runs as rq
from app.queries import sources as sq
from app.registry import get_spec
from app.schedule import incremental_due, probe_due, reconciliation_due, silent_too_long
from app.secrets import load_keyring
from app.services.alerts import evaluate_alerts
from app.services.jobs import defer_in
from app.services.sources import RunConflict, start_run
from app.settings import load_settings
from app.vector.config import process_stage
from connectors.base import CallStats, SourceError

log = logging.getLogger(__name__)

tasks = procrastinate.Blueprint()
QUEUE = "sync"


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _url() -> str:
    return database_url(load_config())


@tasks.task(
    name="run_sync",
    queue=QUEUE,
    # LaneBusy: Knowledge Store holds the lane; the run stays queued and the job tries again later.
    retry=RetryStrategy(max_attempts=10_000, wait=15, retry_exceptions={LaneBusy}),
)
def run_sync(run_id: int) -> str:
    keyring = load_keyring(load_config())
    with connect(_url()) as conn:
        assume_role(conn, WORKER_ROLE)  # the run writes with the worker role's grants only
        outcome = execute_run(conn, run_id, worker_id=worker_id(), keyring=keyring, chunks=process_stage())
    log.info("run %s ended %s (%s items, %s errors)", run_id, outcome.state, outcome.done, outcome.errors)
    return outcome.state


@tasks.periodic(cron="* * * * *")
@tasks.task(name="tick", queue="periodic", queueing_lock="tick")
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
    with connect(_url()) as conn:
        settings = load_settings(conn)
        for stale in rq.list_stale_runs(conn, stale_after=settings.stale_run_after):
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
            if s.webhook_enabled and silent_too_long(now, s.last_success, settings.watchdog_silence):
                # One watchdog run per silence episode, and only when the cheap probe finds a delta.
                fresh_episode = s.last_watchdog is None or s.last_watchdog < s.last_success
                if fresh_episode and has_delta(conn, source, keyring):
                    counts["watchdog"] += start("incremental", "watchdog")
        # ALERTS (issue 10 §4): open/resolve incidents and queue their notifications, once a tick.
        counts.update({f"alerts_{k}": v for k, v in evaluate_alerts(conn, now).items()})
        conn.commit()
    return counts


def probe(conn: Any, source: sq.GetSourceRow, keyring: Any) -> str:
    status = "unreachable"
    try:
        connector = get_spec(source.connector_type).create(source_config(source, keyring), CallStats())
        try:
            status = connector.probe()
        finally:
            connector.close()
    except (SourceError, KeyError):
        status = "unreachable"
    sq.set_probe_result(conn, id=source.id, status=status)
    conn.commit()
    return status


def has_delta(conn: Any, source: sq.GetSourceRow, keyring: Any) -> bool:
    """Watchdog's cheap check (seed 001): only a found delta starts a run."""
    cursor = source.incremental_cursor or {}
    if not cursor.get("updated"):
        return True
    since = datetime.fromisoformat(cursor["updated"])
    try:
        connector = get_spec(source.connector_type).create(source_config(source, keyring), CallStats())
        try:
            return bool(connector.has_delta(since))
        finally:
            connector.close()
    except SourceError:
        return False


def build_app(url: str) -> procrastinate.App:
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))
    app.add_tasks_from(tasks, namespace="harvester")
    app.add_tasks_from(alert_jobs.blueprint, namespace="harvester")  # send_alert (issue 10 §4)
    return app


def run_worker(concurrency: int = 2, *, periodic: bool = True) -> None:
    config = load_config()
    url = database_url(config)
    migrate(url, config.backups_dir)
    app = build_app(url)
    # Without the periodic queue the tick's jobs wait (one at most: queueing lock) for a worker that has it.
    queues = [QUEUE, "periodic", alert_jobs.QUEUE] if periodic else [QUEUE, alert_jobs.QUEUE]
    app.run_worker(queues=queues, concurrency=concurrency, name=worker_id())


from app import webhook_jobs as _webhook_jobs  # noqa: E402,F401  registers apply_webhook and the delivery pruning
from app.vector import jobs as _vector_jobs  # noqa: E402,F401  registers the reembed jobs on `tasks`
