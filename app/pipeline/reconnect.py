"""Execute a run through database restarts (issue 11 §2).

When PostgreSQL goes away mid-run, the unit of work in flight rolls back with the connection and the
run keeps its last committed checkpoint. :func:`execute_with_reconnect` then waits for the database
with a capped exponential backoff, gives the lost lease up (ReleaseRunLease: claimable at once, no stale
wait) and executes the run again, which claims a new generation and resumes from the checkpoint. After
``give_up_after`` seconds without a database it raises the last error: the run stays ``running``, its
heartbeat goes stale and the tick's stale-run resume takes it over later.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import psycopg

from app.errors import HarvesterError
from app.pipeline.lease import RunLease
from app.pipeline.load import ChunkStage
from app.pipeline.run import DEFAULT_PREFETCH, ConnectionLost, RunOutcome, execute_run, execution_id
from app.secrets import Keyring

log = logging.getLogger(__name__)

FIRST_WAIT = 0.5  # seconds before the first reconnect attempt
MAX_WAIT = 10.0  # backoff cap between attempts


def execute_with_reconnect(
    open_connection: Callable[[], psycopg.Connection[Any]],
    run_id: int,
    *,
    worker: str,
    keyring: Keyring,
    chunks: ChunkStage | None = None,
    give_up_after: float = 600.0,
    prefetch: int = DEFAULT_PREFETCH,
    source_process: bool | None = False,
) -> RunOutcome:
    """Run ``run_id`` like :func:`execute_run` on connections from ``open_connection`` (autocommit), each
    execution under a new :func:`execution_id` of ``worker``, resuming after a lost connection."""
    lost: RunLease | None = None
    deadline: float | None = None
    wait = FIRST_WAIT
    while True:
        try:
            with open_connection() as conn:
                if lost is not None:
                    lost.release(conn)  # False: someone else already took it over; the claim will say so
                    log.info("run %s: database is back; resuming from the checkpoint", run_id)
                    lost = None
                return execute_run(
                    conn,
                    run_id,
                    worker_id=execution_id(worker),
                    keyring=keyring,
                    chunks=chunks,
                    prefetch=prefetch,
                    source_process=source_process,
                )
        except ConnectionLost as exc:
            lost = exc.lease
            error: Exception = exc
        except (psycopg.OperationalError, HarvesterError) as exc:
            # HarvesterError: open_connection could not reach the database. An OperationalError on a live
            # connection (a lock or statement timeout) is not an outage: it ends the job like before.
            if isinstance(exc, psycopg.OperationalError) and not _is_disconnect(exc):
                raise
            error = exc
        now = time.monotonic()
        deadline = deadline if deadline is not None else now + give_up_after
        if now >= deadline:
            raise error
        log.warning("run %s: database unreachable (%s); retrying in %.1fs", run_id, type(error).__name__, wait)
        time.sleep(wait)
        wait = min(wait * 2, MAX_WAIT)


def _is_disconnect(exc: psycopg.OperationalError) -> bool:
    """A connection-level failure (no SQLSTATE, or class 08 / 57P0x admin shutdown) rather than a timeout."""
    state = exc.sqlstate or ""
    return state == "" or state.startswith("08") or state in ("57P01", "57P02", "57P03")
