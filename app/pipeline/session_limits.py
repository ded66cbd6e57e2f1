"""What a run's database session may wait for and hold, and for how long (decisions 159 and 160).

A run's page is one transaction that first locks its run's row (``HoldRunLease``). Two ways it could hold
that row without end, and with it the heartbeat, a takeover and a cancel from the API, all of which update
the same row:

- **A lock someone else holds** (decision 159). A page's write that waits for a table lock (``LOCK TABLE``,
  a ``CREATE INDEX`` without ``CONCURRENTLY``, ``VACUUM FULL``, an ``ALTER TABLE``) waited without end, and
  the worker logged nothing. Every connection of a run now carries ``lock_timeout`` = the platform setting
  ``lock_wait_max``; a wait that runs out fails its statement with ``lock_not_available``, the page rolls
  back whole (its checkpoint with it), and the run ends ``failed`` with a reason naming who held the lock.
- **A worker paused inside a page** (decision 160). A process stopped (SIGSTOP, ``docker pause``, a frozen
  VM, a debugger) between a page's statements leaves its transaction open: the server keeps the row locked
  for as long as the process stays stopped, and the worker that takes the stale run over waits for it in
  ``ClaimRun``. The run's connection now carries ``idle_in_transaction_session_timeout`` = ``stale_run_after
  + takeover_grace``, the moment another worker may take the run over: the server ends such a session then,
  the page rolls back, the takeover goes through, and the paused process, once woken, finds its connection
  gone and its lease taken (``ConnectionLost``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from app.queries import session_limits as q

HOLDERS_SHOWN = 3  # sessions named in a failed run's reason


def seconds_text(seconds: int) -> str:
    """A duration setting's value for ``seconds``, as PostgreSQL reads it."""
    return f"{seconds}s"


def bound_lock_waits(conn: psycopg.Connection[Any], seconds: int) -> psycopg.Connection[Any]:
    """``conn`` (a run's other connection: the read-ahead's, a source process's; an API pool's, decision 161),
    whose statements now wait at most ``seconds`` for another session's lock. Set in the session, not in the
    connection's startup ``options``, which a pooler such as PgBouncer refuses unless told to ignore them."""
    q.set_lock_wait(conn, lock_timeout=seconds_text(seconds))
    return conn


@contextmanager
def run_session_limits(conn: psycopg.Connection[Any], lock_wait_s: int, idle_s: int) -> Iterator[None]:
    """``lock_timeout`` and ``idle_in_transaction_session_timeout`` on ``conn`` for the block, then the
    session's own again (the connection may serve a worker's next job)."""
    q.set_run_session_limits(conn, lock_timeout=seconds_text(lock_wait_s), idle_timeout=seconds_text(idle_s))
    try:
        yield
    finally:
        if not (conn.broken or conn.closed):
            q.reset_run_session_limits(conn)


def lock_wait_detail(conn: psycopg.Connection[Any], seconds: int) -> str:
    """A failed run's reason after one of its statements waited ``seconds`` for a lock: who holds a table lock
    that blocks writes now. Read on ``conn`` once the page has rolled back."""
    head = f"a statement waited longer than lock_wait_max ({seconds} s) for a lock another session holds"
    try:
        holders = q.write_lock_holders(conn, lim=HOLDERS_SHOWN)
    except psycopg.Error as exc:  # the reason still says what happened; who held it is a bonus
        return f"{head} (its holders could not be read: {type(exc).__name__})"
    if not holders:
        return f"{head}; no session holds a table lock that blocks writes now (a row lock, or one let go since)"
    named = "; ".join(
        f"pid {h.pid} (user {h.usename or '?'}, application {h.application_name or '?'}) holds {h.mode} on "
        f"{h.relation}, its transaction open {h.held_seconds} s"
        for h in holders
    )
    return f"{head}: {named}"
