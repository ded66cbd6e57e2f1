"""app.pipeline.session_limits on a real server: a run's lock_timeout and idle-transaction timeout for the run
and back, the reason a run gives when a wait for another session's lock runs out (decision 159), and a page's
transaction left idle ended by the server (decision 160)."""

from __future__ import annotations

import psycopg
import pytest

from app.db.connect import connect
from app.pipeline.run import conninfo_of
from app.pipeline.session_limits import bound_lock_waits, lock_wait_detail, run_session_limits


def _show(conn: psycopg.Connection[tuple[object, ...]], name: str = "lock_timeout") -> object:
    row = conn.execute("select current_setting(%s)", (name,)).fetchone()
    assert row is not None
    return row[0]


def test_a_run_s_limits_hold_for_the_block_and_the_connection_s_own_come_back(fresh_db_url: str) -> None:
    own = "-c lock_timeout=7s -c idle_in_transaction_session_timeout=9min"
    with psycopg.connect(fresh_db_url, autocommit=True, options=own) as conn:
        with run_session_limits(conn, 3, 150):
            assert (_show(conn), _show(conn, "idle_in_transaction_session_timeout")) == ("3s", "150s")
            with pytest.raises(psycopg.errors.LockNotAvailable), psycopg.connect(fresh_db_url) as holder:
                holder.execute("lock table sources in share mode")
                conn.execute("insert into sources (name, connector_type) values ('x', 'jira')")
                conn.execute("select 1")  # never reached: the insert waited 3 s for the holder's lock
        assert (_show(conn), _show(conn, "idle_in_transaction_session_timeout")) == ("7s", "9min")


def test_a_transaction_left_idle_past_the_limit_is_ended_by_the_server_and_its_locks_let_go(
    fresh_db_url: str,
) -> None:
    with psycopg.connect(fresh_db_url, autocommit=True) as conn, psycopg.connect(fresh_db_url) as other:
        with run_session_limits(conn, 60, 1):
            conn.execute("begin")
            conn.execute("lock table sources in share mode")  # what a paused page holds, in short
            other.execute("set lock_timeout = '10s'")
            # Waits for the idle transaction's end (about 1 s), not for the 10 s bound.
            other.execute("insert into sources (name, connector_type) values ('x', 'jira')")
            other.commit()
            with pytest.raises(psycopg.errors.IdleInTransactionSessionTimeout):
                conn.execute("select 1")
        assert conn.broken


def test_a_run_s_other_connections_wait_as_long_and_keep_what_its_own_had(fresh_db_url: str) -> None:
    """Set in the session, not in the startup options a pooler may refuse: what the run's own connection was
    given still holds on the sibling, and its lock_timeout is the run's."""
    with psycopg.connect(fresh_db_url, autocommit=True, options="-c work_mem=8MB") as conn:
        sibling = conninfo_of(conn, "harvester-fetch")
    assert "lock_timeout" not in sibling
    with psycopg.connect(sibling, autocommit=True) as other:
        assert bound_lock_waits(other, 4) is other
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
