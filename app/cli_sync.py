"""CLI: `harvester sources ...` and `harvester sync ...` (issue 3 "Contract")."""

from __future__ import annotations

import argparse
import json
import os
import socket
from typing import Any

from app.commands import REGISTRY
from app.config import load_config
from app.errors import HarvesterError


def _open() -> tuple[Any, Any]:
    from app.db.connect import connect, database_url
    from app.db.migrate import migrate
    from app.secrets import load_keyring

    config = load_config()
    url = database_url(config)
    migrate(url, config.backups_dir)
    return connect(url), load_keyring(config)


def _sources_add(args: argparse.Namespace) -> int:
    from app.services.sources import NewSource, create_source

    scope_list: list[Any] = [s for s in (args.scope or [])]
    filters = json.loads(args.filters) if args.filters else {}
    conn, keyring = _open()
    with conn:
        source_id = create_source(
            conn,
            keyring,
            NewSource(
                name=args.name,
                connector_type=args.connector,
                base_url=args.base_url,
                credential=args.credential or os.environ.get("HARVESTER_SOURCE_CREDENTIAL"),
                webhook_secret=args.webhook_secret,
                scope_mode="selected" if scope_list else "all",
                scope_list=scope_list,
                content_filters=filters,
                webhook_enabled=bool(args.webhook_secret),
            ),
        )
        conn.commit()
    print(source_id)
    return 0


def _sources_list(args: argparse.Namespace) -> int:
    from app.queries import sources as sq

    conn, _ = _open()
    with conn:
        rows = sq.list_sources_overview(conn)
    print(f"{'id':>4}  {'name':24} {'connector':10} {'state':12} {'health':8} {'entities':>8} {'dlq':>5}  last run")
    for r in rows:
        last = f"#{r.last_run_id} {r.last_run_state}" if r.last_run_id else "-"
        print(
            f"{r.id:>4}  {r.name[:24]:24} {r.connector_type:10} {r.state:12} {r.health or '-':8} "
            f"{r.entity_count:>8} {r.dlq_depth:>5}  {last}"
        )
    return 0


def _sync(args: argparse.Namespace) -> int:
    from app.pipeline.run import LaneBusy, execute_run
    from app.progress import RunProgressBar
    from app.services.sources import resolve_source, start_run
    from app.vector.config import process_stage

    conn, keyring = _open()
    with conn:
        source_id = resolve_source(conn, args.source)
        options = {"confirm_mass_delete": True} if args.confirm_mass_delete else None
        run_id = start_run(conn, source_id, mode=args.mode, trigger="manual", options=options)
        conn.commit()
        worker_id = f"cli:{socket.gethostname()}:{os.getpid()}"
        with RunProgressBar(f"run #{run_id} {args.mode}") as bar:
            try:
                outcome = execute_run(
                    conn, run_id, worker_id=worker_id, keyring=keyring, chunks=process_stage(), on_progress=bar.update
                )
            except LaneBusy:
                raise HarvesterError(
                    f"the source's lane is held by another process; run #{run_id} stays queued for a worker"
                ) from None
        from app.queries import runs as rq

        run = rq.get_run(conn, id=run_id)
        conn.commit()
    assert run is not None
    print(
        f"run #{run_id} {run.state}: {run.entities_done or 0} items, {run.error_count} to the DLQ, "
        f"{run.api_calls} API calls, {run.rate_limited} rate-limited"
        + (f", {outcome.deleted} soft-deleted" if outcome.deleted else "")
    )
    if run.error_detail:
        print(f"detail: {run.error_detail}")
    return 0 if run.state == "succeeded" else 1


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sources = sub.add_parser("sources", help="register and list sources")
    ssub = sources.add_subparsers(dest="sources_command", required=True)
    add = ssub.add_parser("add", help="register a source; prints its id")
    add.add_argument("--name", required=True)
    add.add_argument("--connector", required=True, help="jira | confluence | slack")
    add.add_argument("--base-url", required=True)
    add.add_argument("--credential", help="API token (or set HARVESTER_SOURCE_CREDENTIAL); stored encrypted")
    add.add_argument("--webhook-secret", help="HMAC secret for webhooks; stored encrypted")
    add.add_argument("--scope", action="append", help="scope item (project key, JQL, space, channel); repeatable")
    add.add_argument("--filters", help='content filters as JSON, e.g. \'{"comments": false}\'')
    add.set_defaults(handler=_sources_add)
    ssub.add_parser("list", help="sources with health, entity count, DLQ depth, last run").set_defaults(
        handler=_sources_list
    )

    sync = sub.add_parser("sync", help="run one sync in the foreground with live progress")
    sync.add_argument("source", help="source name or id")
    sync.add_argument("--mode", choices=["full", "incremental", "reconciliation"], default="incremental")
    sync.add_argument(
        "--confirm-mass-delete", action="store_true", help="let a reconciliation delete more than the guard share"
    )
    sync.set_defaults(handler=_sync)


REGISTRY.append(register)
