"""`harvester` command line (brief §5). Each subcommand has --help; errors are one line, exit 2."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from app import audit
from app.config import load_config
from app.errors import HarvesterError
from app.logs import add_logging_options, configure_logging, level_from

Handler = Callable[[argparse.Namespace], int]


def _db_migrate(args: argparse.Namespace) -> int:
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


def _db_status(args: argparse.Namespace) -> int:
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


def _db_stop(args: argparse.Namespace) -> int:
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harvester",
        description="Harvester: pulls sources into PostgreSQL (entities, chunks, edges) with their ACLs.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    db = sub.add_parser("db", help="database schema: migrate, status, stop the embedded server")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    db_sub.add_parser(
        "migrate", help="apply pending migrations (advisory-locked; backs up a non-empty database first)"
    ).set_defaults(handler=_db_migrate)
    db_sub.add_parser("status", help="list migrations: applied, pending, changed").set_defaults(
        handler=_db_status
    )
    db_sub.add_parser("stop", help="stop the embedded PostgreSQL server").set_defaults(handler=_db_stop)

    for register in _extra_commands():
        register(sub)
    add_logging_options(parser)  # after the subcommands: every one of them takes --log-level too
    return parser


def _extra_commands() -> list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]]:
    """Subcommands that live beside the code they drive (sync, sources, serve, worker, ...)."""
    from app import commands

    return commands.load_all()


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        configure_logging(level_from(args))
    except HarvesterError as exc:
        print(f"harvester: error: {exc}", file=sys.stderr)
        return 2
    handler: Handler = args.handler
    # One audit event per mutating command (seed 000 admin log), whatever way it ends.
    with audit.cli_action(args) as outcome:
        try:
            outcome.code = handler(args)
        except HarvesterError as exc:
            outcome.code = 2
            print(f"harvester: error: {exc}", file=sys.stderr)
        except KeyboardInterrupt:
            outcome.code = 130
            print("harvester: interrupted", file=sys.stderr)
    return outcome.code


if __name__ == "__main__":
    sys.exit(main())
