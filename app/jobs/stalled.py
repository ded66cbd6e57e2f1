"""Recover Procrastinate jobs left in ``doing`` by a dead worker (issue 11 §3).

A worker killed with SIGKILL (or cut off from the database for good) leaves its jobs in ``doing`` and
stops beating ``procrastinate_workers``. ``recover_stalled_jobs`` runs on the periodic queue, asks
Procrastinate for the jobs of workers silent for :data:`STALLED_HEARTBEATS` heartbeats
(``JobManager.get_stalled_jobs``) and

- retries a ``run_sync`` job no sooner than its run can be taken over (stale_run_after + takeover_grace
  after the dead worker's last beat): the retried job claims the run and resumes it from its checkpoint;
- retries the other one-off jobs (webhook runs, the re-embed) at once;
- fails the periodic ones (the next period defers a fresh one) and any job that stalled
  :data:`MAX_STALLS` times; a given-up ``run_sync`` job ends its run as ``failed`` with the reason,
  unless a live worker holds the run.

HARVESTER_STALLED_JOBS_CRON overrides the schedule (default every minute; a 6th field means seconds).
"""

from __future__ import annotations

import asyncio
import datetime
import logging

import procrastinate
from procrastinate import JobContext
from procrastinate.exceptions import UniqueViolation
from procrastinate.jobs import Job, Status

from app.db.connect import connect
from app.jobs.common import PERIODIC_QUEUE, db_url, worker_heartbeat
from app.queries import runs as rq
from app.settings import load_settings

log = logging.getLogger(__name__)

blueprint = procrastinate.Blueprint()

STALLED_HEARTBEATS = 3  # a worker that missed this many heartbeats is dead (Procrastinate's default: 30 s)
MAX_STALLS = 5  # a job whose worker died this many times is failed, not retried again
RUN_TASK = "harvester:run_sync"
RETRIED_AT_ONCE = frozenset({"harvester:apply_webhook", "harvester:reembed"})


@blueprint.task(
    name="recover_stalled_jobs", queue=PERIODIC_QUEUE, queueing_lock="recover_stalled_jobs", pass_context=True
)
async def recover_stalled_jobs(context: JobContext, timestamp: int) -> dict[str, int]:
    """Retry or fail the jobs of dead workers; end the runs of given-up sync jobs with a reason."""
    manager = context.app.job_manager
    counts = {"retried": 0, "failed": 0, "runs_failed": 0}
    stalled_after = STALLED_HEARTBEATS * worker_heartbeat()
    stalled = await manager.get_stalled_jobs(seconds_since_heartbeat=stalled_after)
    for job in stalled:
        if job.id == context.job.id:
            continue
        retry_at = await _retry_at(job)
        if retry_at is not None:
            try:
                await manager.retry_job(job, retry_at=retry_at)
                counts["retried"] += 1
                log.warning("job %s (%s) of a dead worker retried", job.id, job.task_name)
                continue
            except UniqueViolation:
                pass  # its queueing lock has a waiting twin already: this one is redundant
        await manager.finish_job(job, status=Status.FAILED, delete_job=False)
        counts["failed"] += 1
        log.warning("job %s (%s) of a dead worker failed (attempt %s)", job.id, job.task_name, job.attempts + 1)
        run_id = job.task_kwargs.get("run_id") if job.task_name == RUN_TASK else None
        if isinstance(run_id, int):
            reason = f"gave up: the worker running its job died {job.attempts + 1} times"
            counts["runs_failed"] += await asyncio.to_thread(_fail_unheld_run, run_id, reason)
    return counts


async def _retry_at(job: Job) -> datetime.datetime | None:
    """When to retry ``job``, or None to fail it."""
    if job.attempts + 1 >= MAX_STALLS:
        return None
    now = datetime.datetime.now(datetime.UTC)
    if job.task_name == RUN_TASK:
        run_id = job.task_kwargs.get("run_id")
        claimable = await asyncio.to_thread(_claimable_at, run_id) if isinstance(run_id, int) else None
        return max(now, claimable) if claimable is not None else now
    if job.task_name in RETRIED_AT_ONCE:
        return now
    return None  # periodic tasks: the next period defers a fresh job


def _claimable_at(run_id: int) -> datetime.datetime | None:
    """When another worker may take the run over: its last heartbeat + stale_run_after + takeover_grace."""
    with connect(db_url()) as conn:
        settings = load_settings(conn)
        run = rq.get_run(conn, id=run_id)
        conn.commit()
    if run is None or run.heartbeat_at is None:
        return None
    return run.heartbeat_at + datetime.timedelta(seconds=settings.stale_run_after + settings.takeover_grace)


def _fail_unheld_run(run_id: int, reason: str) -> int:
    with connect(db_url()) as conn:
        settings = load_settings(conn)
        n = rq.fail_unheld_run(
            conn, id=run_id, error_detail=reason, stale_after=settings.stale_run_after, grace=settings.takeover_grace
        )
        conn.commit()
    return n
