"""`harvester` command line (brief §5). Each subcommand has --help; errors are one line, exit 2.

The command modules are listed in :data:`COMMANDS`; each has ``register(sub)`` adding its subcommands.
A new command is a module here and one entry in that tuple, never an import for its side effect.
Handlers import what they drive lazily, so ``harvester --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import metadata

from app import audit
from app.cli import db, demo, search, serve, sources, sync, tokens, worker
from app.cli.common import Handler
from app.config import load_config
from app.errors import HarvesterError
from app.logs import add_logging_options, configure_logging, level_from

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
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(sub)
    add_logging_options(parser)  # after the subcommands: every one of them takes --log-level too
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        load_config()  # checked before any command runs: a bad variable is one line, exit 2
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

