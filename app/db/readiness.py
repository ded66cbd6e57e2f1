"""Start-up checks of `harvester serve` and `harvester worker`: they never run DDL (issue 9 §5).

`harvester db migrate`, run by the database owner, is the only thing that changes the schema. A process
that serves or works only checks, before it starts, that the schema is the one its installed SQL
describes (every migration applied with an equal checksum, every trigger file current) and that its
login holds the rights it will use. Anything else stops it with one line naming what to do.
"""

from __future__ import annotations

from typing import Any, Literal

import psycopg

from app.db.connect import API_ROLE, WORKER_ROLE, connect
from app.db.migrate import load_migrations, load_trigger_files
from app.errors import HarvesterError
from app.queries import migrations as mq
from app.queries import roles as rq

Process = Literal["api", "worker"]
_MIGRATE = "run `harvester db migrate` as the database owner, then start again"
_GRANTS = "docs/operations.md, Roles"


def schema_problem(conn: psycopg.Connection[Any]) -> str | None:
    """What makes the database's schema differ from the installed SQL, or None when it is current."""
    if not mq.schema_installed(conn):
        return "the database has no Harvester schema"
    applied = {r.version: r.checksum for r in mq.list_applied_migrations(conn)}
    migrations = load_migrations()
    changed = [m.name for m in migrations if m.version in applied and applied[m.version] not in (None, m.checksum)]
    if changed:
        return f"migration {changed[0]} differs from the one applied (migrations are forward-only)"
    pending = [m.version for m in migrations if m.version not in applied]
    if pending:
        return f"{len(pending)} migration(s) pending: {', '.join(pending)}"
    recorded = {r.name: r.checksum for r in mq.list_applied_trigger_files(conn)}
    stale = [f.name for f in load_trigger_files() if recorded.get(f.name) != f.checksum]
    if stale:
        return f"trigger file(s) not current: {', '.join(stale)}"
    return None


def _privilege_problem(conn: psycopg.Connection[Any], process: Process) -> str | None:
    user = conn.info.user
    if process == "api":
        # The API's pool runs SET ROLE harvester_api on every connection (app/api/db.py).
        if not rq.is_member_of_role(conn, role=API_ROLE):
            return f"login role {user!r} is not a member of {API_ROLE}; grant {API_ROLE} to {user} ({_GRANTS})"
        return None
    missing = rq.missing_worker_privilege(conn)
    if missing:
        return f"login role {user!r} lacks {missing}; grant {WORKER_ROLE} to {user} ({_GRANTS})"
    return None


def require_ready(url: str, process: Process | None = None) -> None:
    """Raise HarvesterError (one line) unless the schema is current and the login may do ``process``'s work
    (None: a one-off command such as `harvester token create`, which checks the schema only)."""
    # Autocommit: read-only checks, nothing to commit or roll back.
    with connect(url, autocommit=True, application_name=f"harvester-{process}-check") as conn:
        try:
            problem = schema_problem(conn)
            if problem is not None:
                raise HarvesterError(f"the database schema is not current ({problem}); {_MIGRATE}")
            problem = _privilege_problem(conn, process) if process is not None else None
        except psycopg.errors.InsufficientPrivilege as exc:
            role = API_ROLE if process == "api" else WORKER_ROLE
            raise HarvesterError(
                f"login role {conn.info.user!r} may not read the schema bookkeeping "
                f"({exc.diag.message_primary}); grant {role} to {conn.info.user} ({_GRANTS})"
            ) from None
        if problem is not None:
            raise HarvesterError(problem)
