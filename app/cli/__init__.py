"""`harvester` command line (brief §5). Each subcommand has --help; errors are one line, exit 2.

The command modules are listed in :data:`COMMANDS`; each has ``register(sub)`` adding its subcommands.
A new command is a module here and one entry in that tuple, never an import for its side effect.
Handlers import what they drive lazily, so ``harvester --help`` stays fast.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from importlib import metadata

from app.cli import db, demo, search, serve, sources, sync, tokens, worker
from app.cli.common import Handler
from app.errors import HarvesterError
from app.redact import install_log_redaction

# The order is the order of `harvester --help`.
COMMANDS = (db, serve, tokens, worker, sources, sync, search, demo)


def _version() -> str:
    try:
        return metadata.version("harvester")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harvester",
        description="Harvester: pulls sources into PostgreSQL (entities, chunks, edges) with their ACLs.",
    )
    parser.add_argument("--version", action="version", version=f"harvester {_version()}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    install_log_redaction()
    handler: Handler = args.handler
    try:
        return handler(args)
    except HarvesterError as exc:
        print(f"harvester: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("harvester: interrupted", file=sys.stderr)
        return 130
