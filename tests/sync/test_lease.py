"""The fenced run lease (issue 11 §1): a holder whose heartbeat went stale and that was taken over stops
at its next write and never counts, deletes or clears anything of the new holder's run."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
import pytest

from app.db.connect import connect
from app.pipeline.run import Progress, RunOutcome, execute_run, execution_id
from app.queries import runs as rq
from app.secrets import Keyring
from app.services.sources import start_run
from tests.sync.conftest import JiraFactory, add_source, live_ids, scalar, sync

ISSUES = 300


def _no_database() -> psycopg.Connection[Any]:
    """A heartbeat connection that never opens: the holder beats no more, as if its process were paused."""
    raise psycopg.OperationalError("heartbeat disabled by the test")


def test_a_paused_holder_taken_over_mid_reconciliation_writes_nothing_and_deletes_nothing(
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira_factory: JiraFactory,
    fresh_db_url: str,
) -> None:
    jira = jira_factory(ISSUES)
    source_id = add_source(conn, keyring, jira)
    assert sync(conn, keyring, source_id, "full")[0].state == "succeeded"
    probe.execute("update platform_settings set value = '1' where key in ('stale_run_after', 'takeover_grace')")
    run_id = start_run(conn, source_id, mode="reconciliation", trigger="manual")
    old_paused, old_resume = threading.Event(), threading.Event()
    new_paused, new_resume = threading.Event(), threading.Event()
    outcomes: dict[str, RunOutcome] = {}
    errors: list[BaseException] = []

    def pause_after(pages: int, paused: threading.Event, resume: threading.Event) -> Any:
        seen = {"pages": 0}

        def on_progress(progress: Progress) -> None:
            seen["pages"] += 1
            if seen["pages"] == pages:
                paused.set()
                assert resume.wait(60)

        return on_progress

    def holder(name: str, pages: int, paused: threading.Event, resume: threading.Event, beat: Any) -> None:
        try:
            with connect(fresh_db_url, autocommit=True) as own:
                outcomes[name] = execute_run(
                    own,
                    run_id,
                    worker_id=execution_id("same-host:1"),
                    keyring=keyring,
                    on_progress=pause_after(pages, paused, resume),
                    heartbeat_connection=beat,
                )
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    old = threading.Thread(target=holder, args=("old", 2, old_paused, old_resume, _no_database))
    old.start()
    assert old_paused.wait(60)
    time.sleep(2.5)  # stale (1 s) + grace (1 s): the paused holder may now be taken over
    new = threading.Thread(target=holder, args=("new", 1, new_paused, new_resume, None))
    new.start()
    assert new_paused.wait(60)
    old_resume.set()  # the old holder wakes up mid-way through the new holder's run
    old.join(60)
    new_resume.set()
    new.join(120)

    assert errors == []
    assert outcomes["old"].state == "cancelled"
    assert outcomes["new"].state == "succeeded"
    run = rq.get_run(probe, id=run_id)
    assert run is not None
    assert (run.state, run.deliveries, run.entities_done, run.error_detail) == ("succeeded", 2, ISSUES, None)
    assert len(live_ids(probe, source_id)) == ISSUES
    assert scalar(probe, "select count(*) from entities where deleted_at is not null") == 0
    assert scalar(probe, "select count(*) from run_seen_items where run_id = %s", (run_id,)) == 0


def test_the_heartbeat_keeps_a_run_with_slow_pages_alive(
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira_factory: JiraFactory,
    fresh_db_url: str,
) -> None:
    jira = jira_factory(60)
    source_id = add_source(conn, keyring, jira)
    probe.execute("update platform_settings set value = '1' where key in ('stale_run_after', 'takeover_grace')")
    run_id = start_run(conn, source_id, mode="full", trigger="manual")
    jira.fault(latency_ms=3000)  # every page takes longer than stale + grace
    done = threading.Event()
    stolen: list[int] = []

    def thief() -> None:
        with psycopg.connect(fresh_db_url, autocommit=True) as own:
            while not done.wait(0.3):
                claim = rq.claim_run(own, id=run_id, worker_id="thief", stale_after=1, grace=1)
                if claim is not None:
                    stolen.append(claim.deliveries)

    watcher = threading.Thread(target=thief)
    watcher.start()
    started = time.monotonic()
    try:
        outcome = execute_run(conn, run_id, worker_id=execution_id("slow"), keyring=keyring)
    finally:
        done.set()
        watcher.join()

    assert time.monotonic() - started > 3
    assert stolen == []
    assert outcome.state == "succeeded"
    assert scalar(probe, "select deliveries from sync_runs where id = %s", (run_id,)) == 1


def test_execution_ids_differ_inside_one_process() -> None:
    assert execution_id("host:1") != execution_id("host:1")
    assert execution_id("host:1").startswith("host:1:")


@pytest.mark.parametrize("interval", [1, 120, 3600])
def test_beat_interval_is_a_fraction_of_the_stale_threshold(interval: int) -> None:
    from app.pipeline.lease import beat_interval

    assert 0 < beat_interval(interval) < interval
