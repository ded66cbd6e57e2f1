"""Deferring Procrastinate jobs in the request's own transaction: the run row (or the webhook delivery)
and its job commit together, so no run is left queued without a job and no job points at nothing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import procrastinate
import psycopg

from app.services.sources import start_run


def defer_in(conn: psycopg.Connection[Any], jobs: procrastinate.App, task: str, **kwargs: Any) -> int:
    deferrer = jobs.configure_task(task)
    job = deferrer.make_new_job(**kwargs)
    deferred = jobs.job_manager.defer_job(job, connection=conn)
    assert deferred.id is not None
    return deferred.id


def start_and_defer(
    conn: psycopg.Connection[Any],
    jobs: procrastinate.App,
    source_id: int,
    *,
    mode: str,
    trigger: str,
    scope: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
) -> int:
    """Queue a run and its ``run_sync`` job in the caller's transaction; raises RunConflict."""
    run_id = start_run(conn, source_id, mode=mode, trigger=trigger, scope=scope, options=options)
    defer_in(conn, jobs, "harvester:run_sync", run_id=run_id)
    return run_id
