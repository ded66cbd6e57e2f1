"""Keep the Procrastinate worker running through database restarts (issue 11 §2).

Procrastinate stops its worker when a side task (the LISTEN connection, the heartbeat) fails, which is
what a PostgreSQL restart does, and ``run_worker`` then returns normally: a process exiting 0 that a
supervisor "restart on failure" would not bring back. :func:`run_supervised` owns SIGINT/SIGTERM itself,
so it can tell a requested stop (exit 0) from the worker stopping on its own: then it waits for the
database with a capped backoff and starts the worker again, and exits non-zero only when the database
stayed unreachable for ``give_up_after`` seconds. Runs in flight keep going meanwhile: ``run_sync``
waits for the database itself and resumes its run from the checkpoint (app/pipeline/reconnect.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Sequence
from typing import Any

import procrastinate
import psycopg

log = logging.getLogger(__name__)

EXIT_DATABASE_GONE = 3  # the database stayed unreachable for give_up_after seconds
FIRST_WAIT = 0.5
MAX_WAIT = 10.0


def run_supervised(
    app: procrastinate.App,
    url: str,
    *,
    queues: Sequence[str],
    concurrency: int,
    name: str,
    give_up_after: float,
    heartbeat: float = 10.0,
) -> int:
    """Run the worker until SIGINT/SIGTERM (0) or a database outage longer than ``give_up_after`` (3).
    ``heartbeat``: seconds between the worker's heartbeats; silent for three, it counts as dead."""
    options = {
        "queues": list(queues),
        "concurrency": concurrency,
        "name": name,
        "update_heartbeat_interval": heartbeat,
        "stalled_worker_timeout": 3 * heartbeat,
    }
    return asyncio.run(_supervise(app, url, options, give_up_after))


async def _supervise(app: procrastinate.App, url: str, options: dict[str, Any], give_up_after: float) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    while True:
        error: BaseException | None = None
        try:
            async with app.open_async():
                worker = asyncio.create_task(app.run_worker_async(install_signal_handlers=False, **options))
                stopping = asyncio.create_task(stop.wait())
                await asyncio.wait({worker, stopping}, return_when=asyncio.FIRST_COMPLETED)
                if stop.is_set():
                    worker.cancel()  # Procrastinate's graceful stop: running jobs are waited for
                    with contextlib.suppress(asyncio.CancelledError):
                        await worker
                    return 0
                stopping.cancel()
                error = worker.exception()
        except Exception as exc:  # opening the app's pool or the worker's own start-up hit the outage
            error = exc
        if stop.is_set():
            return 0
        log.warning("the worker stopped on its own (%s); waiting for the database", _describe(error))
        if not await _wait_for_database(url, give_up_after, stop):
            if stop.is_set():
                return 0
            log.error("the database stayed unreachable for %.0f s; exiting", give_up_after)
            return EXIT_DATABASE_GONE
        log.info("the database is reachable again; restarting the worker")
        await asyncio.sleep(FIRST_WAIT)  # a worker that keeps stopping for another reason restarts slowly


async def _wait_for_database(url: str, give_up_after: float, stop: asyncio.Event) -> bool:
    deadline = time.monotonic() + give_up_after
    wait = FIRST_WAIT
    while not stop.is_set():
        try:
            conn = await psycopg.AsyncConnection.connect(
                url, connect_timeout=5, application_name="harvester-worker-wait"
            )
            await conn.close()
            return True
        except psycopg.Error:
            if time.monotonic() >= deadline:
                return False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=wait)
        wait = min(wait * 2, MAX_WAIT)
    return False


def _describe(error: BaseException | None) -> str:
    if error is None:
        return "no error"
    cause = error.__cause__ or error
    first = str(cause).strip().splitlines()[0] if str(cause).strip() else ""
    return f"{type(cause).__name__}: {first}" if first else type(cause).__name__
