"""The sync job: every sync run is one ``run_sync(run_id)`` job.

Jobs carry only a run id; the run row is the truth. One active run per source is the database's
partial unique index, not anything here. A run whose worker died is found by its stale heartbeat
(app/jobs/periodic.py) and re-deferred; ClaimRun lets the new worker take it over and the run
resumes from its checkpoint.

No orphaned runs (issue 10): whatever escapes the job body (a missing package, a broken database
call, a bug) first fails the run with the exception's name and message, then propagates so the job
is marked failed too. A run waiting for a lane Knowledge Store holds fails after ``lane_wait_max``.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import procrastinate
import psycopg
from procrastinate import RetryStrategy

from app.config import load_config
from app.db.connect import WORKER_ROLE, assume_role, connect
from app.jobs.common import QUEUE, db_url, worker_id
from app.jobs.webhooks import defer_pending_after
from app.pipeline.reconnect import execute_with_reconnect
from app.pipeline.run import LaneBusy
from app.queries import runs as rq
from app.secrets import load_keyring
from app.settings import load_settings
from app.vector.config import process_stage

log = logging.getLogger(__name__)

blueprint = procrastinate.Blueprint()


@blueprint.task(
    name="run_sync",  # == RUN_SYNC.name once namespaced (tests/jobs/test_job_refs.py)
    queue=QUEUE,
    # LaneBusy: Knowledge Store holds the lane; the run stays queued and the job tries again later, until
    # lane_wait_max. The attempt cap is only a backstop: a job that runs out leaves a queued run the tick reaps.
    retry=RetryStrategy(max_attempts=10_000, wait=15, retry_exceptions={LaneBusy}),
)
def run_sync(run_id: int) -> str:
    me = worker_id()
    try:
        return _run(run_id, me)
    except LaneBusy:
        if _lane_wait_over(run_id, me):
            return "failed"
        raise
    except Exception as exc:
        _abandon(run_id, me, f"the job broke: {describe(exc)}")
        raise


def _run(run_id: int, me: str) -> str:
    config = load_config()
    keyring = load_keyring(config)
    stage = process_stage(config.embedder)  # may raise: a missing embedder package or model fails the run, loudly
    url = db_url()

    def open_connection() -> psycopg.Connection[Any]:
        # Autocommit: execute_run declares its own transactions, one per page.
        conn = connect(url, autocommit=True)
        assume_role(conn, WORKER_ROLE)  # the run writes with the worker role's grants only
        return conn

    # A database restart mid-run: wait for it, then resume from the checkpoint (issue 11 §2).
    outcome = execute_with_reconnect(
        open_connection,
        run_id,
        worker=me,
        keyring=keyring,
        chunks=stage,
        prefetch=config.pipeline_prefetch,
        source_process=config.source_process,
    )
    log.info("run %s ended %s (%s items, %s errors)", run_id, outcome.state, outcome.done, outcome.errors)
    try:
        if defer_pending_after(run_id):
            log.info("run %s ended with webhook items pending for its source: a job takes them now", run_id)
    except Exception:  # the run's own end is recorded; the retrying webhook job still takes the items
        log.exception("run %s: could not defer a job for its source's pending webhook items", run_id)
    return outcome.state


def describe(exc: BaseException) -> str:
    """The exception's type and first message line, bounded (messages here name no secret: the keyring
    and credentials never appear in an exception we raise, and a connection error omits the password)."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {message}"[:400] if message else type(exc).__name__


def _abandon(run_id: int, me: str, detail: str) -> None:
    """Fail the run on a fresh connection (the job's own may be broken); never mask the original error."""
    try:
        with connect(db_url()) as conn:
            failed = rq.abandon_run(conn, id=run_id, worker_id=me, error_detail=detail)
            conn.commit()
    except Exception:
        log.exception("run %s: could not mark the run failed after its job broke", run_id)
        return
    if failed:
        log.error("run %s failed: %s", run_id, detail)


def _lane_wait_over(run_id: int, me: str) -> bool:
    """True when the run has waited queued longer than lane_wait_max and is now failed."""
    with connect(db_url()) as conn:
        settings = load_settings(conn)
        run = rq.get_run(conn, id=run_id)
        conn.commit()
    if run is None:
        return False
    waited = (datetime.now(UTC) - run.created_at).total_seconds()
    if waited <= settings.lane_wait_max:
        return False
    _abandon(
        run_id,
        me,
        f"gave up waiting for the source's lane: held by another process for {int(waited)} s, "
        f"longer than lane_wait_max ({settings.lane_wait_max} s)",
    )
    return True
