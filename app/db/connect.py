"""Resolve where the database is and open connections to it."""

from __future__ import annotations

import psycopg

from app.config import Config
from app.datadir import check_writable, ensure_data_dir
from app.db import embedded
from app.errors import HarvesterError


def database_url(config: Config) -> str:
    """HARVESTER_DATABASE_URL if set, else the embedded server's URL (started if needed)."""
    ensure_data_dir(config.data_dir)
    if config.database_url:
        return config.database_url
    check_writable(config.data_dir)
    return embedded.start(config.data_dir).url()


def connect(
    url: str, *, autocommit: bool = False, application_name: str = "harvester"
) -> psycopg.Connection[tuple[object, ...]]:
    try:
        return psycopg.connect(url, autocommit=autocommit, connect_timeout=10, application_name=application_name)
    except psycopg.OperationalError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise HarvesterError(
            f"cannot reach the database ({first}); check HARVESTER_DATABASE_URL and that PostgreSQL is running"
        ) from exc
