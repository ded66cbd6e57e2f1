"""`harvester` command line (brief §5). Each subcommand has --help; errors are one line, exit 2."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence

from app.config import Config, load_config
from app.errors import HarvesterError

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
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
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
    return parser


def _extra_commands() -> list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]]:
    """Subcommands that live beside the code they drive (sync, sources, serve, worker, ...)."""
    from app import commands

    return commands.load_all()


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config = load_config()  # checked before any command runs: a bad variable is one line, exit 2
    except HarvesterError as exc:
        print(f"harvester: error: {exc}", file=sys.stderr)
        return 2
    configure_logging(config, verbose=args.verbose)
    handler: Handler = args.handler
    try:
        return handler(args)
    except HarvesterError as exc:
        print(f"harvester: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("harvester: interrupted", file=sys.stderr)
        return 130


def configure_logging(config: Config, *, verbose: bool = False) -> None:
    """HARVESTER_LOG_LEVEL (default INFO), or DEBUG with ``-v``."""
    level = logging.DEBUG if verbose else getattr(logging, config.log_level)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    if level > logging.DEBUG:
        # httpx logs every request at INFO: one line per source API call drowns what the run says.
        logging.getLogger("httpx").setLevel(logging.WARNING)


if __name__ == "__main__":
    sys.exit(main())
