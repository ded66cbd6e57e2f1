"""The sync job: every sync run is one ``run_sync(run_id)`` job.

Jobs carry only a run id; the run row is the truth. One active run per source is the database's
partial unique index, not anything here. A run whose worker died is found by its stale heartbeat
(app/jobs/periodic.py) and re-deferred; ClaimRun lets the new worker take it over and the run
resumes from its checkpoint.
"""

from __future__ import annotations

import logging

import procrastinate
from procrastinate import RetryStrategy

from app.config import load_config
from app.db.connect import WORKER_ROLE, assume_role, connect
from app.jobs.common import QUEUE, db_url, worker_id
from app.pipeline.run import LaneBusy, execute_run
from app.secrets import load_keyring
from app.vector.config import process_stage

log = logging.getLogger(__name__)

blueprint = procrastinate.Blueprint()


@blueprint.task(
    name="run_sync",
    queue=QUEUE,
    # LaneBusy: Knowledge Store holds the lane; the run stays queued and the job tries again later.
    retry=RetryStrategy(max_attempts=10_000, wait=15, retry_exceptions={LaneBusy}),
)
def run_sync(run_id: int) -> str:
    config = load_config()
    keyring = load_keyring(config)
    # Autocommit: execute_run declares its own transactions, one per page.
    with connect(db_url(), autocommit=True) as conn:
        assume_role(conn, WORKER_ROLE)  # the run writes with the worker role's grants only
        stage = process_stage(config.embedder)
        outcome = execute_run(conn, run_id, worker_id=worker_id(), keyring=keyring, chunks=stage)
    log.info("run %s ended %s (%s items, %s errors)", run_id, outcome.state, outcome.done, outcome.errors)
    return outcome.state
