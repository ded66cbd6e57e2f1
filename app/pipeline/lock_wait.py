"""How long a run waits for a lock another session holds (decision 159).

A run's page is one transaction that first locks its run's row (``HoldRunLease``). A page's write that waits
for a table lock someone else holds (``LOCK TABLE``, a ``CREATE INDEX`` without ``CONCURRENTLY``, ``VACUUM
FULL``, an ``ALTER TABLE``) used to wait without end, and the run's row stayed locked meanwhile: the heartbeat,
a takeover and a cancel from the API all queued behind it, and the worker logged nothing. Every connection of
a run now carries ``lock_timeout`` = the platform setting ``lock_wait_max``; a wait that runs out fails its
statement with ``lock_not_available``, the page rolls back whole (its checkpoint with it), and the run ends
``failed`` with a reason naming who held the lock. The next run starts from what was committed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from app.queries import lock_waits as q

HOLDERS_SHOWN = 3  # sessions named in a failed run's reason; the rest are counted in the worker's log only


def timeout_text(seconds: int) -> str:
    """The ``lock_timeout`` value for ``seconds``, as PostgreSQL reads it."""
    return f"{seconds}s"


def with_lock_wait(options: str | None, seconds: int) -> str:
    """Connection ``options`` that also set ``lock_timeout`` (a run's sibling connections, its source
    process's), keeping whatever the run's own connection was given."""
    return f"{options or ''} -c lock_timeout={timeout_text(seconds)}".strip()


@contextmanager
def lock_wait(conn: psycopg.Connection[Any], seconds: int) -> Iterator[None]:
    """``lock_timeout`` on ``conn`` for the block, then the session's own again (the connection may serve a
    worker's next job)."""
    q.set_lock_wait(conn, timeout=timeout_text(seconds))
    try:
        yield
    finally:
        if not (conn.broken or conn.closed):
            q.reset_lock_wait(conn)


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
