"""CLI: `harvester search` (permission-filtered semantic / hybrid search) and `harvester reembed`."""

from __future__ import annotations

from typing import Any

import click

from app.cli.common import POSITIVE, Args, Timestamp, add_command, json_option, print_json, ready_url
from app.config import Config, load_config


def _open(config: Config) -> Any:
    from app.db.connect import connect

    return connect(ready_url())


def _search(args: Args) -> int:
    from app.services.sources import resolve_source
    from app.vector.config import require_embedder
    from app.vector.search import Principal, SearchFilters, search

    config = load_config()
    embedder = require_embedder(config.embedder)
    with _open(config) as conn:
        source_ids = tuple(resolve_source(conn, s) for s in args.source) if args.source else None
        conn.commit()
        filters = SearchFilters(
            source_ids=source_ids,
            source_types=tuple(args.type) if args.type else None,
            statuses=tuple(args.status) if args.status else None,
            updated_from=args.updated_from,
            updated_to=args.updated_to,
        )
        results = search(
            conn,
            embedder,
            query=args.query,
            principal=Principal(user=args.user, groups=tuple(args.group or ())),
            k=args.k,
            filters=filters,
            hybrid=args.hybrid,
        )
    if args.as_json:
        from app.api.search import SearchOut, hit_out

        print_json(SearchOut([hit_out(r) for r in results]))
        return 0
    if not results:
        print("no results visible to this principal")
    for n, r in enumerate(results, start=1):
        print(f"{n:>3}. {r.score:.3f}  [{r.source_name}/{r.source_type}/{r.status}] {r.natural_key or ''} {r.title}")
        if r.url:
            print(f"      {r.url}")
        snippet = " ".join(r.snippet.split())
        print(f"      {snippet[:160]}{'…' if len(snippet) > 160 else ''}")
    return 0


def _reembed(args: Args) -> int:
    from app.vector.config import require_embedder
    from app.vector.reembed import models_in_use, reembed

    config = load_config()
    embedder = require_embedder(config.embedder)
    with _open(config) as conn:
        before = models_in_use(conn)
        conn.commit()
        for m in before:
            print(f"{m.chunks:>9} chunks embedded by {m.model or '(none)'}")
        if args.check:
            stale = sum(m.chunks for m in before if m.model != embedder.model_name)
            print(f"{stale} chunks to re-embed with {embedder.model_name}")
            return 1 if stale else 0
        conn.autocommit = True  # reembed commits batch by batch
        result = reembed(
            conn,
            embedder,
            batch=args.batch,
            on_batch=lambda r: print(f"  {r.replaced} replaced", flush=True),
        )
    print(f"re-embedded {result.replaced} chunks with {result.model} ({result.skipped} rewritten meanwhile by sync)")
    return 0


def register(cli: click.Group) -> None:
    add_command(
        cli,
        "search",
        _search,
        click.argument("query"),
        click.option("--user", help="the searching user's id or email (ACL token user:<id>)"),
        click.option("--group", multiple=True, help="a group, e.g. jira:alpha-team (token group:<...>); repeatable"),
        click.option("-k", "k", type=POSITIVE, default=10, show_default=True, help="entities to return"),
        click.option("--source", multiple=True, help="only this source (name or id); repeatable"),
        click.option(
            "--type",
            "type",
            multiple=True,
            type=click.Choice(["ticket", "page", "message"]),
            help="only this source type",
        ),
        click.option(
            "--status", multiple=True, type=click.Choice(["draft", "final", "archived"]), help="only this status"
        ),
        click.option("--updated-from", type=Timestamp(), help="updated at the source at or after (ISO 8601)"),
        click.option("--updated-to", type=Timestamp(), help="updated at the source before (ISO 8601)"),
        click.option("--hybrid", is_flag=True, help="fuse full-text and vector rankings (RRF)"),
        json_option,
        help="semantic search as a given user/groups (only what they may see); one line per entity, by score",
    )
    add_command(
        cli,
        "reembed",
        _reembed,
        click.option("--batch", type=POSITIVE, default=256, show_default=True, help="chunks per transaction"),
        click.option("--check", is_flag=True, help="only report; exit 1 when a re-embed is due"),
        help="re-embed chunks made by another model than the configured embedder",
    )
