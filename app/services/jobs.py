"""Deferring Procrastinate jobs in the caller's own transaction: the run row (or the webhook delivery)
and its job commit together, so no run is left queued without a job and no job points at nothing.

Why not ``app.configure_task(...).defer(connection=conn)`` on the process's app: inside a worker that
app's PsycopgConnector has its async pool open, so its "sync connector" is itself and the defer query
runs on the async path with our sync connection (``'Cursor' object does not support the asynchronous
context manager protocol``: issue 10). Here a never-opened App over a SyncPsycopgConnector only runs
the defer query on the connection it is handed, whatever process and event loop we are in; it never
opens a pool of its own. Task name and queue are spelled out in a :class:`JobRef` (services sit below
``app.jobs``; tests/jobs check each ref against the task the worker registers).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import procrastinate
import psycopg
from procrastinate.jobs import DEFAULT_PRIORITY, Job

from app.services.sources import start_run


@dataclass(frozen=True, slots=True)
class JobRef:
    """A task the worker registers (``harvester:<name>``) and the queue it runs on."""

    name: str
    queue: str


SYNC_QUEUE = "sync"  # runs, webhook runs, the re-embed: work that may take long
PERIODIC_QUEUE = "periodic"  # the tick and the 10-minute checks; kept apart so long runs never delay them

RUN_SYNC = JobRef("harvester:run_sync", SYNC_QUEUE)
APPLY_WEBHOOK = JobRef("harvester:apply_webhook", SYNC_QUEUE)

# Only ever asked to run a query on a connection it is given: it is never opened, holds no pool.
_DEFERRER = procrastinate.App(connector=procrastinate.SyncPsycopgConnector())


def defer_in(conn: psycopg.Connection[Any], ref: JobRef, *, schedule_in: float | None = None, **kwargs: Any) -> int:
    """Queue ``ref(**kwargs)`` in ``conn``'s open transaction; returns the job id."""
    scheduled_at = datetime.now(UTC) + timedelta(seconds=schedule_in) if schedule_in is not None else None
    job = Job(
        id=None,
        queue=ref.queue,
        task_name=ref.name,
        lock=None,
        queueing_lock=None,
        priority=DEFAULT_PRIORITY,
        task_kwargs=dict(kwargs),
        scheduled_at=scheduled_at,
    )
    deferred = _DEFERRER.job_manager.defer_job(job, connection=conn)
    assert deferred.id is not None
    return deferred.id


def start_and_defer(
    conn: psycopg.Connection[Any],
    source_id: int,
    *,
    mode: str,
    trigger: str,
    scope: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
) -> int:
    """Queue a run and its ``run_sync`` job in the caller's transaction; raises RunConflict."""
    run_id = start_run(conn, source_id, mode=mode, trigger=trigger, scope=scope, options=options)
    defer_in(conn, RUN_SYNC, run_id=run_id)
    return run_id
