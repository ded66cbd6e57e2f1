"""app.pipeline.lock_wait on a real server: the session's lock_timeout for a run and back, and the reason a
run gives when a wait for another session's lock runs out (decision 159)."""

from __future__ import annotations

import psycopg
import pytest

from app.db.connect import connect
from app.pipeline.lock_wait import lock_wait, lock_wait_detail, with_lock_wait
from app.pipeline.run import conninfo_of


def _show(conn: psycopg.Connection[tuple[object, ...]]) -> object:
    row = conn.execute("show lock_timeout").fetchone()
    assert row is not None
    return row[0]


def test_a_run_s_lock_wait_holds_for_the_block_and_the_connection_s_own_comes_back(fresh_db_url: str) -> None:
    with psycopg.connect(fresh_db_url, autocommit=True, options="-c lock_timeout=7s") as conn:
        with lock_wait(conn, 3):
            assert _show(conn) == "3s"
            with pytest.raises(psycopg.errors.LockNotAvailable), psycopg.connect(fresh_db_url) as holder:
                holder.execute("lock table sources in share mode")
                conn.execute("insert into sources (name, connector_type) values ('x', 'jira')")
                conn.execute("select 1")  # never reached: the insert waited 3 s for the holder's lock
        assert _show(conn) == "7s"


def test_the_options_of_a_run_s_other_connections_keep_what_its_own_had(fresh_db_url: str) -> None:
    assert with_lock_wait(None, 60) == "-c lock_timeout=60s"
    assert with_lock_wait("-c work_mem=8MB", 5) == "-c work_mem=8MB -c lock_timeout=5s"
    with psycopg.connect(fresh_db_url, autocommit=True, options="-c work_mem=8MB") as conn:
        sibling = conninfo_of(conn, "harvester-fetch", 4)
    with psycopg.connect(sibling, autocommit=True) as other:
        assert _show(other) == "4s"
        row = other.execute("select current_setting('work_mem'), current_setting('application_name')").fetchone()
        assert row == ("8MB", "harvester-fetch")


def test_the_reason_names_each_holder_of_a_lock_that_blocks_writes_and_never_its_statement(fresh_db_url: str) -> None:
    with connect(fresh_db_url, autocommit=True) as conn:
        free = lock_wait_detail(conn, 60)
        assert free.startswith("a statement waited longer than lock_wait_max (60 s)")
        assert "no session holds a table lock that blocks writes now" in free
        with psycopg.connect(fresh_db_url, application_name="dba-vacuum-full") as holder:
            # The statement that took the lock carries a secret; the reason must not.
            holder.execute("select 'token-s3cr3t' where false")
            holder.execute("lock table entity_chunks in access exclusive mode")
            # A lock that does not block writes (VACUUM, CREATE INDEX CONCURRENTLY take it) is not named.
            holder.execute("lock table entity_edges in share update exclusive mode")
            held = lock_wait_detail(conn, 60)
            pid = holder.info.backend_pid
        assert f"pid {pid} (user " in held
        assert "application dba-vacuum-full) holds AccessExclusiveLock on entity_chunks" in held
        assert "entity_edges" not in held and "s3cr3t" not in held
