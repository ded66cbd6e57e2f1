"""CLI: `harvester search` (permission-filtered semantic / hybrid search) and `harvester reembed`."""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import Any

from app.cli.common import Subparsers, ready_url
from app.config import Config, load_config


def _open(config: Config) -> Any:
    from app.db.connect import connect

    return connect(ready_url())


def _search(args: argparse.Namespace) -> int:
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
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "entity_id": r.entity_id,
                        "chunk_id": r.chunk_id,
                        "title": r.title,
                        "url": r.url,
                        "key": r.natural_key,
                        "source": r.source_name,
                        "source_type": r.source_type,
                        "status": r.status,
                        "score": r.score,
                        "vector_distance": r.vector_distance,
                        "text_rank": r.text_rank,
                        "matched_by": list(r.matched_by),
                        "snippet": r.snippet,
                        "highlights": [[{"text": s.text, "mark": s.mark} for s in f] for f in r.highlights],
                    }
                    for r in results
                ],
                ensure_ascii=False,
                indent=2,
            )
        )
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


def _reembed(args: argparse.Namespace) -> int:
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


def _timestamp(value: str) -> datetime:
    return datetime.fromisoformat(value)


def register(sub: Subparsers) -> None:
    s = sub.add_parser(
        "search", help="semantic search as a given user/groups (only what they may see); one line per entity, by score"
    )
    s.add_argument("query", help="query text")
    s.add_argument("--user", help="the searching user's id or email (ACL token user:<id>)")
    s.add_argument("--group", action="append", help="a group, e.g. jira:alpha-team (token group:<...>); repeatable")
    s.add_argument("-k", type=int, default=10, help="entities to return (default 10)")
    s.add_argument("--source", action="append", help="only this source (name or id); repeatable")
    s.add_argument("--type", action="append", choices=["ticket", "page", "message"], help="only this source type")
    s.add_argument("--status", action="append", choices=["draft", "final", "archived"], help="only this status")
    s.add_argument("--updated-from", type=_timestamp, help="updated at the source at or after (ISO 8601)")
    s.add_argument("--updated-to", type=_timestamp, help="updated at the source before (ISO 8601)")
    s.add_argument("--hybrid", action="store_true", help="fuse full-text and vector rankings (RRF)")
    s.add_argument("--json", action="store_true", help="print results as JSON")
    s.set_defaults(handler=_search)

    r = sub.add_parser("reembed", help="re-embed chunks made by another model than the configured embedder")
    r.add_argument("--batch", type=int, default=256, help="chunks per transaction (default 256)")
    r.add_argument("--check", action="store_true", help="only report; exit 1 when a re-embed is due")
    r.set_defaults(handler=_reembed)
