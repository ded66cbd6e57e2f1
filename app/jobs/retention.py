"""Prune the jobs Procrastinate keeps after they end (issue 15 §5: what grows with time).

Every job the worker runs stays in ``procrastinate_jobs``, with its events, once it has ended: the tick
and the stalled-job check add two a minute, a busy source's webhooks one per delivery. Nothing reads
them after a few hours (the run journal is ``sync_runs``), but the tick's orphan check
(``harvester_queued_run_jobs``) reads the run_sync jobs every minute and slowed down as they piled up.
Every hour, jobs that reached a final state (succeeded, failed, cancelled, aborted) more than
``HARVESTER_JOB_RETENTION_HOURS`` ago (default 168: a week to read a failed job's error) are deleted
with Procrastinate's own ``JobManager.delete_old_jobs``. Jobs still waiting or running are never
touched, so no run loses the job that will run it.
"""

from __future__ import annotations

import logging

import procrastinate
from procrastinate import JobContext

from app.config import load_config
from app.jobs.common import PERIODIC_QUEUE

log = logging.getLogger(__name__)

blueprint = procrastinate.Blueprint()


@blueprint.task(name="prune_jobs", queue=PERIODIC_QUEUE, queueing_lock="prune_jobs", pass_context=True)
async def prune_jobs(context: JobContext, timestamp: int) -> None:
    """Delete the jobs that ended more than the retention ago, in every queue and final state."""
    hours = load_config().job_retention_hours
    await context.app.job_manager.delete_old_jobs(
        nb_hours=hours, include_failed=True, include_cancelled=True, include_aborted=True
    )
    log.info("pruned the jobs that ended more than %s hours ago", hours, extra={"retention_hours": hours})
