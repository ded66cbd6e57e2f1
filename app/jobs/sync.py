"""The sync job: every sync run is one ``run_sync(run_id)`` job.

Jobs carry only a run id; the run row is the truth. One active run per source is the database's
partial unique index, not anything here. A run whose worker died is found by its stale heartbeat
(app/jobs/periodic.py) and re-deferred; ClaimRun lets the new worker take it over and the run
resumes from its checkpoint.
"""

from __future__ import annotations

import logging
from typing import Any

import procrastinate
import psycopg
from procrastinate import RetryStrategy

from app.config import load_config
from app.db.connect import WORKER_ROLE, assume_role, connect
from app.jobs.common import QUEUE, db_url, worker_id
from app.pipeline.reconnect import execute_with_reconnect
from app.pipeline.run import LaneBusy
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
    stage = process_stage(config.embedder)
    url = db_url()

    def open_connection() -> psycopg.Connection[Any]:
        # Autocommit: execute_run declares its own transactions, one per page.
        conn = connect(url, autocommit=True)
        assume_role(conn, WORKER_ROLE)  # the run writes with the worker role's grants only
        return conn

    # A database restart mid-run: wait for it, then resume from the checkpoint (issue 11 §2).
    outcome = execute_with_reconnect(open_connection, run_id, worker=worker_id(), keyring=keyring, chunks=stage)
    log.info("run %s ended %s (%s items, %s errors)", run_id, outcome.state, outcome.done, outcome.errors)
    return outcome.state
