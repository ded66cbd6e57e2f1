"""`harvester` command line (brief §5), built on Click. Each command has --help; bad input is one line, exit 2.

The command modules are listed in :data:`COMMANDS`; each has ``register(cli)`` adding its commands to the
root group. A new command is a module here and one entry in that tuple, never an import for its side
effect. Handlers import what they drive lazily, so ``harvester --help`` stays fast.

Exit codes: 0 done; 1 the command ran and reports a failure (a failed run, pending changes); 2 bad input
(a usage error or a :class:`~app.errors.HarvesterError`), always one line ``harvester: error: ...`` on
stderr naming the option or field; 130 interrupted. An unexpected exception is one line too: its
traceback goes to the log at debug level, never to the terminal.
"""

from __future__ import annotations

import faulthandler
import logging
import signal
import sys
from collections.abc import Sequence
from importlib import metadata

import click

from app import audit
from app.cli import db, demo, dlq, runs, search, serve, settings, sources, sync, tokens, worker
from app.cli.common import LOG_LEVEL_KEY, Group, Invocation
from app.config import load_config
from app.errors import HarvesterError
from app.logs import configure_logging

# The order is the order of `harvester --help`.
COMMANDS = (db, serve, tokens, worker, sources, runs, dlq, settings, sync, search, demo)

log = logging.getLogger("harvester.cli")


def _version() -> str:
    try:
        return metadata.version("harvester")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(f"harvester {_version()}")
        ctx.exit(0)


def _verbose(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        ctx.meta["harvester.verbose"] = True


def build_cli() -> click.Group:
    cli = Group(
        "harvester",
        help="Harvester: pulls sources into PostgreSQL (entities, chunks, edges) with their ACLs.",
        context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
        params=[
            click.Option(
                ["--version"],
                is_flag=True,
                expose_value=False,
                is_eager=True,
                callback=_print_version,
                help="print the installed version and exit",
            ),
            click.Option(
                ["-v", "--verbose"],
                is_flag=True,
                expose_value=False,
                callback=_verbose,
                help="log at debug level (= --log-level debug)",
            ),
        ],
    )
    for command in COMMANDS:
        command.register(cli)
    return cli


def _error(message: str) -> None:
    print(f"harvester: error: {' '.join(message.split())}", file=sys.stderr)


def _usage_error(exc: click.UsageError) -> None:
    where = exc.ctx.command_path if exc.ctx is not None else "harvester"
    _error(f"{exc.format_message()} (see '{where} --help')")


def _parse(argv: Sequence[str] | None) -> tuple[Invocation | int, str | None]:
    """The parsed command line (or the exit code of --help/--version/a usage error) and the chosen log level."""
    cli = build_cli()
    args = list(sys.argv[1:] if argv is None else argv)
    ctx_meta: dict[str, object] = {}
    try:
        with cli.make_context("harvester", args) as ctx:
            ctx_meta = ctx.meta
            result = cli.invoke(ctx)
    except click.exceptions.Exit as exc:  # --help, --version
        return exc.exit_code, None
    except click.UsageError as exc:
        _usage_error(exc)
        return 2, None
    except click.ClickException as exc:
        _error(exc.format_message())
        return exc.exit_code, None
    except click.Abort:
        print("harvester: interrupted", file=sys.stderr)
        return 130, None
    level = "debug" if ctx_meta.get("harvester.verbose") else ctx_meta.get(LOG_LEVEL_KEY)
    if not isinstance(result, Invocation):  # a group with nothing to run (Click raised before, kept safe)
        _error("missing command (see 'harvester --help')")
        return 2, None
    return result, level if isinstance(level, str) else None


def main(argv: Sequence[str] | None = None) -> int:
    parsed, level = _parse(argv)
    if isinstance(parsed, int):
        return parsed
    try:
        config = load_config()  # checked before any command runs: a bad variable is one line, exit 2
        configure_logging(level or config.log_level.lower())
    except HarvesterError as exc:
        _error(str(exc))
        return 2
    # `kill -USR1 <pid>` writes every thread's stack to stderr (the log) and the process goes on: where a
    # worker that seems stuck is waiting, without a debugger or ptrace rights. Frames name files, lines and
    # functions only, never a value, so no secret can appear.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    # One audit event per mutating command (seed 000 admin log), whatever way it ends.
    with audit.cli_action(parsed.args) as outcome:
        try:
            outcome.code = parsed.handler(parsed.args)
        except HarvesterError as exc:
            outcome.code = 2
            _error(str(exc))
        except KeyboardInterrupt:
            outcome.code = 130
            print("harvester: interrupted", file=sys.stderr)
        except Exception as exc:
            # Never a traceback on the terminal: the log has it (debug), the user gets one line.
            log.debug("unexpected error in %s", " ".join(parsed.path), exc_info=exc)
            outcome.code = 1
            _error(
                f"{' '.join(('harvester', *parsed.path))} failed unexpectedly; "
                "run it again with --log-level debug to see why"
            )
    return outcome.code
