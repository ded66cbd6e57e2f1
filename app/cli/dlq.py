"""CLI: `harvester dlq list|retry` (seed 000 §3): a source's dead letters and the DLQ-retry run.

``--json`` prints what ``GET /sources/{id}/dead-letters`` and ``POST .../dead-letters/retry`` answer.
"""

from __future__ import annotations

import click

from app.cli.common import Args, add_command, add_group, connection_and_keyring, json_option, print_json
from app.errors import HarvesterError

REASONS = ("permission", "not_found", "malformed", "rate_limited", "unknown")


def _dlq_list(args: Args) -> int:
    from app.api.dead_letters import dead_letters_page
    from app.cli.common import print_table
    from app.services.sources import resolve_source

    conn, keyring = connection_and_keyring()
    with conn:
        source_id = resolve_source(conn, args.source)
        out = dead_letters_page(conn, keyring, source_id, args.reason, None, args.cursor, args.limit)
    if args.as_json:
        print_json(out)
        return 0
    print_table(
        ("id", "type", "item", "reason", "attempts", "updated", "detail"),
        (
            (
                d.id,
                d.source_type,
                d.source_entity_id,
                d.reason,
                d.attempts,
                d.updated_at.isoformat(timespec="seconds"),
                (d.error_detail or "")[:60],
            )
            for d in out.items
        ),
    )
    if out.next_cursor is not None:
        print(f"(more: --cursor {out.next_cursor})")
    return 0


def _dlq_retry(args: Args) -> int:
    from app.api.runs import _one_run
    from app.queries import dead_letters as dq
    from app.queries import sources as sq
    from app.services.jobs import start_and_defer
    from app.services.sources import resolve_source

    conn, keyring = connection_and_keyring()
    with conn:
        with conn.transaction():
            source_id = resolve_source(conn, args.source)
            source = sq.get_source(conn, id=source_id)
            if source is None or source.state != "active":
                state = source.state if source else "gone"
                raise HarvesterError(f"source {source_id} is {state}; runs start on active sources only")
            items = [
                {"source_type": r.source_type, "source_entity_id": r.source_entity_id}
                for r in dq.list_dead_letter_identities(conn, source_id=source_id)
            ]
            if not items:
                raise HarvesterError(f"source {source_id} has no dead letters to retry")
            run_id = start_and_defer(
                conn, source_id, mode="incremental", trigger="manual", scope={"kind": "items", "items": items}
            )
        out = _one_run(conn, keyring, run_id)
    if args.as_json:
        print_json(out)
    else:
        print(f"run #{run_id} queued: retries {len(items)} dead letter(s) of source {source_id}")
    return 0


def register(cli: click.Group) -> None:
    dlq = add_group(cli, "dlq", help="dead letters: items that failed, and retrying them")
    source = click.argument("source", metavar="SOURCE")
    add_command(
        dlq,
        "list",
        _dlq_list,
        source,
        click.option("--reason", type=click.Choice(REASONS), help="only this reason"),
        click.option("--limit", type=click.IntRange(1, 500), default=50, show_default=True, help="items per page"),
        click.option("--cursor", help="the next_cursor a previous page printed (oldest first)"),
        json_option,
        help="unresolved failed items of SOURCE (name or id), oldest first",
    )
    add_command(
        dlq,
        "retry",
        _dlq_retry,
        source,
        json_option,
        help="queue the DLQ-retry run of SOURCE: its dead letters fetched again by id (a worker runs it)",
    )
