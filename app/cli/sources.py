"""CLI: `harvester sources add|list` (issue 3 "Contract")."""

from __future__ import annotations

import argparse
import json
from typing import Any

from app.cli.common import Subparsers, connection_and_keyring
from app.config import load_config
from app.errors import HarvesterError


def _sources_add(args: argparse.Namespace) -> int:
    from app.services.sources import NewSource, create_source, credential_problem

    credential = args.credential or load_config().source_credential
    problem = credential_problem(credential)
    if problem is not None:
        where = "--credential" if args.credential else "HARVESTER_SOURCE_CREDENTIAL"
        raise HarvesterError(f"{where}: {problem}")
    scope_list: list[Any] = [s for s in (args.scope or [])]
    try:
        filters = json.loads(args.filters) if args.filters else {}
    except (ValueError, RecursionError):
        raise HarvesterError("--filters: not a JSON object") from None
    if not isinstance(filters, dict):
        raise HarvesterError("--filters: not a JSON object")
    conn, keyring = connection_and_keyring()
    with conn, conn.transaction():
        source_id = create_source(
            conn,
            keyring,
            NewSource(
                name=args.name,
                connector_type=args.connector,
                base_url=args.base_url,
                credential=credential,
                webhook_secret=args.webhook_secret,
                scope_mode="selected" if scope_list else "all",
                scope_list=scope_list,
                content_filters=filters,
                auth_method=args.auth_method,
                webhook_enabled=bool(args.webhook_secret),
            ),
        )
    print(source_id)
    return 0


def _sources_list(args: argparse.Namespace) -> int:
    from app.queries import sources as sq

    conn, _ = connection_and_keyring()
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


def register(sub: Subparsers) -> None:
    sources = sub.add_parser("sources", help="register and list sources")
    ssub = sources.add_subparsers(dest="sources_command", required=True)
    add = ssub.add_parser("add", help="register a source; prints its id")
    add.add_argument("--name", required=True)
    add.add_argument("--connector", required=True, help="jira | confluence | slack")
    add.add_argument("--base-url", required=True)
    add.add_argument("--credential", help="API token (or set HARVESTER_SOURCE_CREDENTIAL); stored encrypted")
    add.add_argument("--webhook-secret", help="HMAC secret for webhooks; stored encrypted")
    add.add_argument("--scope", action="append", help="scope item (project key, JQL, space, channel); repeatable")
    add.add_argument(
        "--auth-method", default="static_token", help="static_token | oauth (only what the connector's manifest lists)"
    )
    add.add_argument("--filters", help="content filters as JSON, e.g. '{\"comments\": false}'")
    add.set_defaults(handler=_sources_add)
    ssub.add_parser("list", help="sources with health, entity count, DLQ depth, last run").set_defaults(
        handler=_sources_list
    )
