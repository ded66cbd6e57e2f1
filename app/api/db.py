"""The API's connection pool: every connection acts as role harvester_api (seed 003: only loading writes
the mirror), so no request path can write entity tables, whatever the login user may do."""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from app.config import DEFAULT_API_LOCK_WAIT
from app.db.connect import configure_connection
from app.pipeline.session_limits import bound_lock_waits
from app.queries import roles


def _configurer(lock_wait_s: int) -> Callable[[psycopg.Connection[Any]], None]:
    def configure(conn: psycopg.Connection[Any]) -> None:
        configure_connection(conn)
        # A block of its own: the pool hands out idle connections only; SET ROLE stays for the session, and
        # so does lock_timeout: a request waits at most that long for a lock another session holds, then
        # answers 503 (decision 161) instead of holding its pooled connection for as long as the lock lasts.
        with conn.transaction():
            roles.set_api_role(conn)
            bound_lock_waits(conn, lock_wait_s)

    return configure


# A connection handed back less than this many seconds ago was working then: checking it again on the
# next checkout would cost every request a round trip. Older ones are pinged (issue 11 §2: a connection
# broken by a database restart is replaced before a request gets it; a restart takes longer than this).
# Database notes the time as it hands a connection back, not the pool's ``reset`` hook: with a ``reset``
# hook psycopg_pool returns every connection through its worker thread, a thread hop per request that
# cost more than the ping it saved (issue 15 §2: the select-1 floor went from ~1 700 to ~2 700 requests/s).
RECENTLY_USED = 1.0
_returned_at: weakref.WeakKeyDictionary[psycopg.Connection[Any], float] = weakref.WeakKeyDictionary()


def _returned(conn: psycopg.Connection[Any]) -> None:
    _returned_at[conn] = time.monotonic()


def _check(conn: psycopg.Connection[Any]) -> None:
    if time.monotonic() - _returned_at.get(conn, float("-inf")) >= RECENTLY_USED:
        ConnectionPool.check_connection(conn)


API_CONNECTIONS = "harvester-api"  # application_name of the pool's connections


def open_pool(
    url: str, *, min_size: int = 2, max_size: int = 10, lock_wait_s: int = DEFAULT_API_LOCK_WAIT
) -> ConnectionPool[psycopg.Connection[Any]]:
    """A pool whose connections all ``SET ROLE harvester_api`` before first use (and after every reset), and
    wait at most ``lock_wait_s`` for another session's lock."""
    pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        # Named in pg_stat_activity, as the worker's and the runs' connections are (docs/operations.md counts them).
        kwargs={"connect_timeout": 10, "application_name": API_CONNECTIONS},
        configure=_configurer(lock_wait_s),
        # A connection broken by a database restart is found and replaced before a request gets it
        # (issue 11 §2): without the check each one answered one 500 after the restart. Connections
        # returned within RECENTLY_USED seconds skip the ping (issue 15 §2: no per-request round trip).
        check=_check,
        open=False,
        name="harvester-api",
    )
    pool.open(wait=True, timeout=30)
    return pool


class Database:
    """Hands handlers a connection inside one transaction (``tx``: committed on success, rolled back on
    error) or, for read-only handlers, in autocommit (``read``)."""

    def __init__(self, pool: ConnectionPool[psycopg.Connection[Any]]) -> None:
        self.pool = pool

    @contextmanager
    def tx(self, *, timeout: float | None = None) -> Iterator[psycopg.Connection[Any]]:
        """``timeout``: seconds to wait for a connection (default: the pool's), e.g. short for /health."""
        with self.pool.connection(timeout=timeout) as conn:
            try:
                yield conn
            finally:
                _returned(conn)

    @contextmanager
    def read(self, *, timeout: float | None = None) -> Iterator[psycopg.Connection[Any]]:
        """A connection in autocommit for handlers that only read: no BEGIN and COMMIT around their
        SELECTs, two round trips fewer per request (issue 15 §2). Each statement sees its own snapshot, so
        only for a handler whose answer does not need two statements to agree. The role stays
        harvester_api (a session setting); the connection goes back to the pool in transaction mode."""
        conn = self.pool.getconn(timeout=timeout)
        try:
            conn.autocommit = True
            yield conn
        finally:
            try:
                conn.autocommit = False
            except psycopg.Error:
                conn.close()  # left mid-transaction or broken: the pool replaces a closed connection
            _returned(conn)
            self.pool.putconn(conn)
