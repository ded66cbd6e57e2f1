"""Apply the dbmate-format migrations in sql/schema, then the re-appliable files in sql/triggers whose
text changed (their sha256 is recorded in schema_trigger_files). The only code that runs DDL: `serve`
and `worker` only check the schema is current (app/db/readiness.py).

The SQL ships inside the distribution as package ``app.sql`` (pyproject maps the repository's top-level
``sql/`` onto it) and is read through ``importlib.resources``: an editable checkout and an installed
wheel read the same files, and nothing depends on where the checkout is (STYLE.md habit 15).

Safe when several processes start at once (seed 003 "Схема базы хаба", issue 2 §4): the runner takes a
session advisory lock, re-reads what is applied only after holding it, applies each pending file once
in its own transaction, and writes exactly one ``pg_dump`` backup of a non-empty database first. An
applied file whose checksum changed stops everything: migrations are forward-only.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from app.db.connect import connect
from app.db.sqlsplit import split_statements
from app.errors import HarvesterError
from app.queries import migrations as q

log = logging.getLogger(__name__)

SQL_PACKAGE = "app.sql"
# Advisory lock key shared by every Harvester process: hashtext('harvester.migrate') as a constant.
MIGRATE_LOCK_KEY = 7_302_517_143_011_922_001
LOCK_WAIT = 1800.0  # seconds a process waits for another one's migration (index builds can be long)
APPLICATION_NAME = "harvester-migrate"
# What the schema needs of the server (decision 156): the checks below run before any migration.
MIN_SERVER_VERSION_NUM = 150000  # PostgreSQL 15
MIN_PGVECTOR = "0.8.0"  # HNSW iterative scans (hnsw.iterative_scan), which every search sets
_UP = re.compile(r"^--\s*migrate:up(?P<opts>[^\n]*)$", re.M)
_DOWN = re.compile(r"^--\s*migrate:down\b", re.M)


def sql_root() -> Traversable:
    """The installed ``sql/`` tree (schema/, triggers/, queries/), wherever the package lives."""
    return files(SQL_PACKAGE)


def _sql_files(folder: Traversable) -> list[Traversable]:
    return sorted((f for f in folder.iterdir() if f.name.endswith(".sql") and f.is_file()), key=lambda f: f.name)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Migration:
    version: str
    name: str
    up_sql: str
    checksum: str
    in_transaction: bool


@dataclass(frozen=True, slots=True)
class TriggerFile:
    """A re-appliable file of sql/triggers; applied by migrate when its checksum differs from the recorded one."""

    name: str
    sql: str
    checksum: str


@dataclass(frozen=True, slots=True)
class MigrationState:
    version: str
    name: str
    applied: bool
    changed: bool  # applied, but the file's checksum differs from the recorded one


@dataclass(frozen=True, slots=True)
class MigrateResult:
    applied: list[str]
    backup: Path | None
    version: str


def load_migrations(schema_dir: Traversable | None = None) -> list[Migration]:
    schema_dir = schema_dir or sql_root() / "schema"
    out: list[Migration] = []
    for path in _sql_files(schema_dir):
        text = path.read_text(encoding="utf-8")
        up = _UP.search(text)
        if up is None:
            raise HarvesterError(f"{path.name} has no '-- migrate:up' line; migrations use the dbmate format")
        down = _DOWN.search(text, up.end())
        body = text[up.end() : down.start() if down else len(text)]
        version = path.name.split("_", 1)[0]
        out.append(
            Migration(
                version=version,
                name=path.name,
                up_sql=body,
                checksum=_sha256(body),
                in_transaction="transaction:false" not in up.group("opts"),
            )
        )
    return out


def load_trigger_files(triggers_dir: Traversable | None = None) -> list[TriggerFile]:
    triggers_dir = triggers_dir or sql_root() / "triggers"
    out: list[TriggerFile] = []
    for path in _sql_files(triggers_dir):
        text = path.read_text(encoding="utf-8")
        out.append(TriggerFile(name=path.name, sql=text, checksum=_sha256(text)))
    return out


def status(conn: psycopg.Connection[tuple[object, ...]]) -> list[MigrationState]:
    # Read-only: `db status` may run with a login that cannot create the bookkeeping table.
    applied = {r.version: r.checksum for r in q.list_applied_migrations(conn)} if q.schema_installed(conn) else {}
    conn.rollback()
    return [
        MigrationState(
            version=m.version,
            name=m.name,
            applied=m.version in applied,
            changed=m.version in applied and applied[m.version] not in (None, m.checksum),
        )
        for m in load_migrations()
    ]


def _version(text: str) -> tuple[int, ...]:
    """``"0.8.6"`` -> ``(0, 8, 6)``; a suffix (``"0.8.0-dev"``) or a missing part counts as nothing."""
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


_MIN_PGVECTOR = _version(MIN_PGVECTOR)


def server_problem(row: q.ServerRequirementsRow) -> str | None:
    """Why the server cannot hold Harvester's schema, in one line naming what to do; None when it can.

    PostgreSQL 15 or later, and pgvector 0.8.0 or later: search sets ``hnsw.iterative_scan``, which
    pgvector 0.7 does not have and, its ``hnsw`` prefix being reserved, refuses ("invalid configuration
    parameter name"), so every search would fail (decision 156). What this database has counts, else
    what the server would create."""
    if row.server_version_num < MIN_SERVER_VERSION_NUM:
        return f"PostgreSQL {row.server_version} is too old: Harvester needs PostgreSQL 15 or later"
    installed, available = row.pgvector_installed, row.pgvector_available
    if not installed and not available:
        return (
            f"pgvector is not installed on this PostgreSQL server; install pgvector >= {MIN_PGVECTOR} "
            "(or unset HARVESTER_DATABASE_URL to use the embedded server)"
        )
    needs = f"Harvester needs {MIN_PGVECTOR} or later (its searches use HNSW iterative scans)"
    if installed and _version(installed) < _MIN_PGVECTOR:
        if available and _version(available) >= _MIN_PGVECTOR:
            return (
                f"this database has pgvector {installed}; {needs}: the server has {available}, run ALTER EXTENSION "
                "vector UPDATE here"
            )
        return (
            f"this database has pgvector {installed}; {needs}: install a newer pgvector on the server, then run "
            "ALTER EXTENSION vector UPDATE"
        )
    if not installed and _version(available) < _MIN_PGVECTOR:
        return f"this PostgreSQL server has pgvector {available}; {needs}: install a newer pgvector on the server"
    return None


def _check_server(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    row = q.server_requirements(conn)
    problem = server_problem(row) if row is not None else "the server did not say what it is"
    if problem is not None:
        raise HarvesterError(problem)


def migrate(
    url: str,
    backups_dir: Path,
    *,
    sql_dir: Traversable | None = None,
    target: str | None = None,
    pg_dump: Path | None = None,
    before_apply: Callable[[], None] | None = None,
) -> MigrateResult:
    """Bring the database at ``url`` to the newest schema (or to ``target``). Idempotent, concurrency-safe.

    ``sql_dir`` (tests) replaces the installed ``app.sql`` tree with a folder of the same shape.
    """
    sql_dir = sql_dir or sql_root()
    migrations = [m for m in load_migrations(sql_dir / "schema") if target is None or m.version <= target]
    with connect(url, autocommit=True, application_name=APPLICATION_NAME) as conn:
        _check_server(conn)
        _take_lock(conn)
        try:
            q.create_schema_migrations(conn)
            # Re-read under the lock: another process may have migrated while we waited.
            applied = {r.version: r.checksum for r in q.list_applied_migrations(conn)}
            for m in migrations:
                recorded = applied.get(m.version)
                if recorded is not None and recorded != m.checksum:
                    raise HarvesterError(
                        f"migration {m.name} was changed after it was applied; migrations are "
                        "forward-only: restore the file from git and add a new migration instead"
                    )
            pending = [m for m in migrations if m.version not in applied]
            old_version = max(applied) if applied else "0"
            backup = None
            if pending and applied:
                backup = _backup(url, backups_dir, old_version, pg_dump)
            if before_apply is not None:
                before_apply()
            _ensure_job_queue_schema(conn)
            for m in pending:
                log.info("applying migration %s", m.name)
                _apply(conn, m)
            if target is None:
                # Trigger files name objects of the newest schema: only a full migration re-applies them.
                _apply_trigger_files(conn, load_trigger_files(sql_dir / "triggers"), schema_changed=bool(pending))
            version = migrations[-1].version if migrations else "0"
            return MigrateResult(applied=[m.version for m in pending], backup=backup, version=version)
        finally:
            q.release_migrate_lock(conn, key=MIGRATE_LOCK_KEY)


def _take_lock(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """Poll for the lock instead of blocking on it: a waiter blocked inside pg_advisory_lock keeps a
    transaction open, and CREATE INDEX CONCURRENTLY in the holder's migration waits for every open
    transaction, so the two would wait for each other."""
    deadline = time.monotonic() + LOCK_WAIT
    while not q.try_migrate_lock(conn, key=MIGRATE_LOCK_KEY):
        if time.monotonic() > deadline:
            raise HarvesterError(
                f"another process has held the migration lock for over {LOCK_WAIT:.0f} s; "
                "check for a stuck `harvester db migrate` (pg_locks, advisory) and retry"
            )
        time.sleep(0.2)


def _apply(conn: psycopg.Connection[tuple[object, ...]], m: Migration) -> None:
    try:
        if m.in_transaction:
            with conn.transaction():
                conn.execute(m.up_sql.encode())
                q.record_migration(conn, version=m.version, checksum=m.checksum)
        else:
            # One statement at a time on the autocommit connection: PostgreSQL runs a multi-command
            # string as one implicit transaction, which CREATE INDEX CONCURRENTLY refuses.
            for statement in split_statements(m.up_sql):
                conn.execute(statement.encode())
            q.record_migration(conn, version=m.version, checksum=m.checksum)
    except psycopg.Error as exc:
        raise HarvesterError(
            f"migration {m.name} failed and was rolled back: {exc.diag.message_primary or exc}"
        ) from exc


def _apply_trigger_files(
    conn: psycopg.Connection[tuple[object, ...]], trigger_files: list[TriggerFile], *, schema_changed: bool
) -> None:
    """Apply the trigger files whose text changed since they were last applied (all of them in one
    transaction). After a migration every file is re-applied: a migration may have replaced a table or
    function a trigger or grant in these files is attached to, and the files are written to be re-run."""
    recorded = {r.name: r.checksum for r in q.list_applied_trigger_files(conn)}
    due = [f for f in trigger_files if schema_changed or recorded.get(f.name) != f.checksum]
    if not due:
        return
    try:
        with conn.transaction():
            for f in due:
                log.info("applying trigger file %s", f.name)
                conn.execute(f.sql.encode())
                q.record_trigger_file(conn, name=f.name, checksum=f.checksum)
    except psycopg.Error as exc:
        raise HarvesterError(f"trigger files failed and were rolled back: {exc.diag.message_primary or exc}") from exc


def _ensure_job_queue_schema(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """Procrastinate's tables come from its own schema file, applied once, before our grants."""
    if q.job_queue_installed(conn):
        return
    from procrastinate.schema import SchemaManager

    with conn.transaction():
        conn.execute(SchemaManager.get_schema().encode())


def _backup(url: str, backups_dir: Path, old_version: str, pg_dump: Path | None) -> Path:
    backups_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = backups_dir / f"{stamp}-schema-v{old_version}.dump"
    tmp = target.with_suffix(".dump.partial")
    exe = str(pg_dump or _default_pg_dump())
    # The password travels in the environment, not in argv where `ps` would show it.
    params = conninfo_to_dict(url)
    env = dict(os.environ)
    password = params.pop("password", None)
    if password:
        env["PGPASSWORD"] = str(password)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            proc = subprocess.run(
                [exe, "--format=custom", "--dbname", make_conninfo("", **params)],
                stdout=out,
                stderr=subprocess.PIPE,
                env=env,
            )
        if proc.returncode != 0:
            raise HarvesterError(
                f"pg_dump backup failed, nothing migrated: {proc.stderr.decode(errors='replace').strip()}"
            )
        tmp.rename(target)
    finally:
        tmp.unlink(missing_ok=True)
    log.info("backup written to %s", target)
    return target


def _default_pg_dump() -> Path:
    from app.db.embedded import pg_bin

    return pg_bin("pg_dump")
