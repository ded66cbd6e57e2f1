"""Resolve where the database is and open connections to it."""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import set_json_dumps

from app.config import Config
from app.datadir import check_writable, ensure_data_dir
from app.db import embedded
from app.db.jsonb import dumps
from app.errors import HarvesterError

log = logging.getLogger(__name__)


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
    """A connection configured for the product (:func:`configure_connection`).

    ``autocommit``: the caller's choice of how its transactions are declared. A job or command that runs
    many units of work (a sync run: one per page) opens it in autocommit mode and wraps each unit in
    ``with conn.transaction():``; one that commits once keeps autocommit off and commits itself.
    """
    try:
        conn = psycopg.connect(url, autocommit=autocommit, connect_timeout=10, application_name=application_name)
    except psycopg.OperationalError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise HarvesterError(
            f"cannot reach the database ({first}); check HARVESTER_DATABASE_URL and that PostgreSQL is running"
        ) from exc
    configure_connection(conn)
    return conn


def configure_connection(conn: psycopg.Connection[Any]) -> None:
    """What every connection the product opens needs: jsonb parameters encoded by :func:`app.db.jsonb.dumps`.

    Registered on the connection, not process-wide, so no query's encoding depends on import order.
    The API pool calls this from its ``configure`` hook.
    """
    set_json_dumps(dumps, context=conn)


WORKER_ROLE = "harvester_worker"
API_ROLE = "harvester_api"


def assume_role(conn: psycopg.Connection[Any], role: str) -> None:
    """SET ROLE for the session, so the grants of ``role`` (not the login's) bound what it may write.

    A login that cannot assume the role (a managed database whose login is already scoped) keeps its own
    rights; that is logged, not fatal.
    """
    from app.queries import roles

    if role != WORKER_ROLE and role != API_ROLE:
        raise ValueError(f"unknown role {role!r}")
    with conn.transaction():
        member = roles.is_member_of_role(conn, role=role)
        if member:
            conn.execute(sql.SQL("set role {}").format(sql.Identifier(role)))
    if not member:
        log.warning("login %s cannot SET ROLE %s; running with the login's own rights", conn.info.user, role)
