"""CLI: `harvester db migrate|status|stop` (the schema and the embedded server)."""

from __future__ import annotations

import click

from app.cli.common import Args, add_command, add_group


def _db_migrate(args: Args) -> int:
    from app.config import load_config
    from app.db.connect import database_url
    from app.db.migrate import migrate

    config = load_config()
    result = migrate(database_url(config), config.backups_dir)
    if result.applied:
        print(f"applied {len(result.applied)} migration(s): {', '.join(result.applied)}")
    else:
        print("schema is up to date")
    if result.backup:
        print(f"backup: {result.backup}")
    print(f"schema version: {result.version}")
    return 0


def _db_status(args: Args) -> int:
    from app.config import load_config
    from app.db.connect import connect, database_url
    from app.db.migrate import status

    config = load_config()
    url = database_url(config)
    with connect(url) as conn:
        states = status(conn)
    where = "external (HARVESTER_DATABASE_URL)" if config.database_url else f"embedded in {config.pgdata}"
    print(f"database: {where}")
    for s in states:
        mark = "changed!" if s.changed else ("applied" if s.applied else "pending")
        print(f"  {mark:8} {s.name}")
    pending = sum(not s.applied for s in states)
    changed = sum(s.changed for s in states)
    print(f"{len(states) - pending} applied, {pending} pending" + (f", {changed} changed" if changed else ""))
    return 1 if changed else 0


def _db_stop(args: Args) -> int:
    from app.config import load_config
    from app.db import embedded

    config = load_config()
    if config.database_url:
        print("HARVESTER_DATABASE_URL is set: there is no embedded server to stop")
        return 0
    server = embedded.attach(config.data_dir)
    if server is None:
        print("the embedded server is not running")
        return 0
    server.stop()
    print("embedded server stopped")
    return 0


def register(cli: click.Group) -> None:
    db = add_group(cli, "db", help="database schema: migrate, status, stop the embedded server")
    add_command(
        db,
        "migrate",
        _db_migrate,
        help="apply pending migrations (advisory-locked; backs up a non-empty database first)",
    )
    add_command(db, "status", _db_status, help="list migrations: applied, pending, changed")
    add_command(db, "stop", _db_stop, help="stop the embedded PostgreSQL server")
