"""The API's connection pool: every connection acts as role harvester_api (seed 003: only loading writes
the mirror), so no request path can write entity tables, whatever the login user may do."""

from __future__ import annotations

import time
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from app.db.connect import configure_connection
from app.queries import roles
from app.queries.aio import roles as aroles


def _configure(conn: psycopg.Connection[Any]) -> None:
    configure_connection(conn)
    # A block of its own: the pool hands out idle connections only; SET ROLE stays for the session.
    with conn.transaction():
        roles.set_api_role(conn)


# A connection handed back less than this many seconds ago was working then: checking it again on the
# next checkout would cost every request a round trip. Older ones are pinged (issue 11 §2: a connection
# broken by a database restart is replaced before a request gets it; a restart takes longer than this).
RECENTLY_USED = 1.0
_returned_at: weakref.WeakKeyDictionary[psycopg.Connection[Any] | psycopg.AsyncConnection[Any], float] = (
    weakref.WeakKeyDictionary()
)


def _returned(conn: psycopg.Connection[Any]) -> None:
    _returned_at[conn] = time.monotonic()


def _check(conn: psycopg.Connection[Any]) -> None:
    if time.monotonic() - _returned_at.get(conn, float("-inf")) >= RECENTLY_USED:
        ConnectionPool.check_connection(conn)


async def _configure_async(conn: psycopg.AsyncConnection[Any]) -> None:
    configure_connection(conn)
    await aroles.set_api_role(conn)  # autocommit: SET ROLE holds for the session


async def _returned_async(conn: psycopg.AsyncConnection[Any]) -> None:
    _returned_at[conn] = time.monotonic()


async def _check_async(conn: psycopg.AsyncConnection[Any]) -> None:
    if time.monotonic() - _returned_at.get(conn, float("-inf")) >= RECENTLY_USED:
        await AsyncConnectionPool.check_connection(conn)


def open_pool(url: str, *, min_size: int = 2, max_size: int = 10) -> ConnectionPool[psycopg.Connection[Any]]:
    """A pool whose connections all ``SET ROLE harvester_api`` before first use (and after every reset)."""
    pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        kwargs={"connect_timeout": 10},
        configure=_configure,
        # A connection broken by a database restart is found and replaced before a request gets it
        # (issue 11 §2): without the check each one answered one 500 after the restart. Connections
        # returned within RECENTLY_USED seconds skip the ping (issue 15 §2: no per-request round trip).
        check=_check,
        reset=_returned,
        open=False,
        name="harvester-api",
    )
    pool.open(wait=True, timeout=30)
    return pool


async def open_async_pool(
    url: str, *, min_size: int = 2, max_size: int = 10
) -> AsyncConnectionPool[psycopg.AsyncConnection[Any]]:
    """The asyncio twin of :func:`open_pool` for the hot read handlers (issue 15 §2): a query awaited on
    the event loop instead of a worker thread and a sync pool. Same role, same checkout check; its
    connections stay in autocommit (they serve single-statement reads, :meth:`Database.aread`)."""
    pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] = AsyncConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        kwargs={"connect_timeout": 10, "autocommit": True},
        configure=_configure_async,
        check=_check_async,
        reset=_returned_async,
        open=False,
        name="harvester-api-async",
    )
    await pool.open(wait=True, timeout=30)
    return pool


class Database:
    """Hands handlers a connection inside one transaction (``tx``: committed on success, rolled back on
    error), for read-only handlers in autocommit (``read``), or an asyncio connection in autocommit for
    read-only handlers that run on the event loop (``aread``)."""

    def __init__(
        self,
        pool: ConnectionPool[psycopg.Connection[Any]],
        apool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] | None = None,
    ) -> None:
        self.pool = pool
        self.apool = apool

    @asynccontextmanager
    async def aread(self, *, timeout: float | None = None) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """As :meth:`read`, awaited on the event loop: no thread hop. Each statement commits on its own
        (the pool's connections are in autocommit), so only for handlers whose statements need not agree
        on one snapshot."""
        if self.apool is None:
            raise RuntimeError("this Database has no asyncio pool (open_async_pool)")
        async with self.apool.connection(timeout=timeout) as conn:
            yield conn

    @contextmanager
    def tx(self, *, timeout: float | None = None) -> Iterator[psycopg.Connection[Any]]:
        """``timeout``: seconds to wait for a connection (default: the pool's), e.g. short for /health."""
        with self.pool.connection(timeout=timeout) as conn:
            yield conn

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
            self.pool.putconn(conn)
