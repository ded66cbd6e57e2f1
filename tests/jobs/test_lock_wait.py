"""A run whose write waits for a lock another session holds (decision 159), through a real worker.

A DBA's ``LOCK TABLE``, a ``CREATE INDEX`` without ``CONCURRENTLY`` or a ``VACUUM FULL`` on ``entities`` blocks
a page's write. Before, the write waited without end while its transaction held the run's row, so the
heartbeat queued behind it too, and the worker logged nothing. Now the wait is bounded by the platform setting
``lock_wait_max``: the run ends ``failed`` with the holder named, the worker lives on, and the next run loads
everything once the lock is gone.
"""

from __future__ import annotations

from typing import Any

import psycopg

from app.secrets import Keyring
from tests.jobs.conftest import Procs, committed, ended, queued, wait_for
from tests.sync.conftest import JiraFactory, add_source, scalar


def test_a_write_blocked_by_a_table_lock_fails_its_run_naming_the_holder_and_the_next_run_loads_all(
    procs: Procs,
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira_factory: JiraFactory,
    fresh_db_url: str,
) -> None:
    conn.execute("update platform_settings set value = '3' where key = 'lock_wait_max'")
    jira = jira_factory(400)
    source_id = add_source(conn, keyring, jira)
    jira.fault(latency_ms=200)
    run_id = queued(conn, source_id)
    worker = procs.worker("--no-periodic")
    committed(probe, run_id, procs)

    with psycopg.connect(fresh_db_url, application_name="dba-reindex") as holder:
        holder.execute("lock table entities in share mode")  # what CREATE INDEX without CONCURRENTLY takes
        ended(probe, run_id, procs, timeout=60)
        row = probe.execute(
            "select state, error_detail, entities_done from sync_runs where id = %s", (run_id,)
        ).fetchone()
        assert row is not None
        state, detail, done = str(row[0]), str(row[1]), int(row[2])
        assert state == "failed", detail
        assert "lock_wait_max (3 s)" in detail
        assert f"pid {holder.info.backend_pid} " in detail and "application dba-reindex" in detail, detail
        assert "ShareLock on entities" in detail, detail
        holder.rollback()

    # What the run committed, page by page with its checkpoint, is all there is: the blocked page left nothing.
    # A failed run counts its committed pages and the one that failed (decision 144).
    assert 200 <= done <= 400
    assert scalar(probe, "select count(*) from entities where source_id = %s", (source_id,)) == done - 100
    assert f"run {run_id} failed: a statement waited longer than lock_wait_max" in worker.tail(400)

    # The same worker takes the next run, and it loads every issue once.
    jira.clear_faults()
    second = queued(conn, source_id)
    terminal = "select state in ('succeeded', 'failed', 'cancelled') from sync_runs where id = %s"
    wait_for(lambda: scalar(probe, terminal, (second,)), 90, "the next run to end", procs)
    assert scalar(probe, "select state from sync_runs where id = %s", (second,)) == "succeeded"
    assert worker.popen.poll() is None
    assert scalar(probe, "select count(*) from entities where source_id = %s", (source_id,)) == 400
    distinct = "select count(distinct source_entity_id) from entities where source_id = %s"
    assert scalar(probe, distinct, (source_id,)) == 400
