"""One active run per source under concurrent starts, and cancelling a running run (seed 000)."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg

from app.pipeline.run import RunOutcome, execute_run
from app.queries import runs as rq
from app.secrets import Keyring
from app.services.sources import RunConflict, start_run
from tests.sync.conftest import JiraFactory, add_source, scalar

ATTEMPTS = 20


def test_twenty_concurrent_starts_give_one_run_and_nineteen_conflicts_naming_it(
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira_factory: JiraFactory,
    fresh_db_url: str,
) -> None:
    source_id = add_source(conn, keyring, jira_factory(10))
    barrier = threading.Barrier(ATTEMPTS)
    started: list[int] = []
    conflicts: list[int | None] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def attempt() -> None:
        try:
            with psycopg.connect(fresh_db_url) as own:
                barrier.wait()
                try:
                    run_id = start_run(own, source_id, mode="full", trigger="manual")
                    own.commit()
                    with lock:
                        started.append(run_id)
                except RunConflict as exc:
                    own.rollback()
                    with lock:
                        conflicts.append(exc.active_run_id)
        except BaseException as exc:  # surfaced below: a thread must not swallow a failure
            errors.append(exc)

    threads = [threading.Thread(target=attempt) for _ in range(ATTEMPTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    assert len(started) == 1
    assert conflicts == [started[0]] * (ATTEMPTS - 1)
    assert scalar(probe, "select count(*) from sync_runs where source_id = %s", (source_id,)) == 1


def test_cancelled_run_stops_at_its_next_page(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira_factory: JiraFactory
) -> None:
    jira = jira_factory(1000)
    source_id = add_source(conn, keyring, jira)
    jira.fault(latency_ms=150)
    run_id = start_run(conn, source_id, mode="full", trigger="manual")
    conn.commit()
    result: list[RunOutcome] = []
    worker = threading.Thread(target=lambda: result.append(execute_run(conn, run_id, worker_id="w1", keyring=keyring)))
    worker.start()
    try:
        deadline = time.monotonic() + 60  # a guard against a hang, not an assertion on speed
        while not scalar(probe, "select coalesce(entities_done, 0) from sync_runs where id = %s", (run_id,)):
            assert time.monotonic() < deadline, "the run never committed a page"
            time.sleep(0.02)
        assert rq.cancel_run(probe, id=run_id) == run_id
    finally:
        jira.clear_faults()
        worker.join()

    assert result[0].state == "cancelled"
    run = rq.get_run(probe, id=run_id)
    assert run is not None and run.state == "cancelled" and run.finished_at is not None
    assert run.entities_done is not None and run.entities_done < 1000
    # The page whose SaveProgress found the run cancelled left no row: entities match the committed counter.
    assert scalar(probe, "select count(*) from entities where source_id = %s", (source_id,)) == run.entities_done
    assert scalar(probe, "select count(*) from run_seen_items where run_id = %s", (run_id,)) == 0
