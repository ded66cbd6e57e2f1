"""CLI: `harvester runs list|show|cancel` (seed 000 §2): a source's run history, one run, cancelling one.

``--json`` prints what ``GET /sources/{id}/runs``, ``GET /runs/{id}`` and ``POST /runs/{id}/cancel`` answer:
the API's own views build it.
"""

from __future__ import annotations

from typing import Any

import click

from app.cli.common import ID, Args, add_command, add_group, connection_and_keyring, json_option, print_json
from app.errors import HarvesterError


def _one(conn: Any, keyring: Any, run_id: int) -> Any:
    """``GET /runs/{id}``'s answer (with the completeness audit of a reconciliation)."""
    from app.api.runs import _one_run
    from app.queries import runs as rq

    if rq.get_run(conn, id=run_id) is None:
        raise HarvesterError(f"RUN_ID: no run {run_id}; see `harvester runs list SOURCE`")
    return _one_run(conn, keyring, run_id)


def _line(r: Any) -> tuple[Any, ...]:
    p = r.progress
    done = f"{p.done}/{p.total}" if p.total is not None else str(p.done)
    return (
        r.id,
        r.run_type,
        r.trigger,
        r.state,
        done,
        r.error_count,
        r.api_calls,
        r.rate_limited,
        r.created_at.isoformat(timespec="seconds"),
        r.duration_seconds,
    )


_HEAD = ("id", "type", "trigger", "state", "items", "errors", "calls", "429s", "created", "seconds")


def _runs_list(args: Args) -> int:
    from app.api.runs import RunFilters, runs_page
    from app.cli.common import print_table
    from app.services.sources import resolve_source

    conn, keyring = connection_and_keyring()
    with conn:
        source_id = resolve_source(conn, args.source) if args.source is not None else None
        filters = RunFilters(state=args.state, trigger=args.trigger)
        out = runs_page(conn, keyring, source_id, filters, args.cursor, args.limit)
    if args.as_json:
        print_json(out)
        return 0
    print_table(_HEAD, (_line(r) for r in out.items))
    if out.next_cursor is not None:
        print(f"(more: --cursor {out.next_cursor})")
    return 0


def _runs_show(args: Args) -> int:
    import msgspec

    from app.cli.common import print_fields

    conn, keyring = connection_and_keyring()
    with conn:
        run = _one(conn, keyring, args.run_id)
    if args.as_json:
        print_json(run)
    else:
        print_fields(msgspec.to_builtins(run))
    return 0


def _runs_cancel(args: Args) -> int:
    from app.queries import runs as rq

    conn, keyring = connection_and_keyring()
    with conn:
        with conn.transaction():
            cancelled = rq.cancel_run(conn, id=args.run_id)
            if cancelled is None:
                run = rq.get_run(conn, id=args.run_id)
                if run is None:
                    raise HarvesterError(f"RUN_ID: no run {args.run_id}; see `harvester runs list SOURCE`")
                raise HarvesterError(f"run {args.run_id} is already {run.state}")
        out = _one(conn, keyring, args.run_id)
    if args.as_json:
        print_json(out)
    else:
        print(f"run {args.run_id} cancelled (the worker stops at its next page)")
    return 0


def register(cli: click.Group) -> None:
    runs = add_group(cli, "runs", help="sync runs: history, one run with live progress, cancel")
    add_command(
        runs,
        "list",
        _runs_list,
        click.argument("source", metavar="[SOURCE]", required=False),
        click.option("--limit", type=click.IntRange(1, 500), default=50, show_default=True, help="runs per page"),
        click.option("--cursor", help="the next_cursor a previous page printed (newest first)"),
        click.option(
            "--state",
            type=click.Choice(["queued", "running", "succeeded", "failed", "cancelled"]),
            help="only runs in this state",
        ),
        click.option(
            "--trigger",
            type=click.Choice(["connect", "schedule", "webhook", "watchdog", "manual"]),
            help="only runs started by this trigger",
        ),
        json_option,
        help="run history of SOURCE (name or id), or of every source; newest first: type, items, errors, 429s",
    )
    run_id = click.argument("run_id", metavar="RUN_ID", type=ID)
    add_command(runs, "show", _runs_show, run_id, json_option, help="one run with progress, rate and ETA")
    add_command(
        runs,
        "cancel",
        _runs_cancel,
        run_id,
        json_option,
        help="cancel a queued or running run; the next run starts fresh",
    )
