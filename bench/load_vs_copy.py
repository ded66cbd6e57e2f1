"""Loader throughput vs binary COPY of the same rows into the same table (issue 3 benchmarks).

Baseline: ``COPY entities (...) FROM STDIN (FORMAT BINARY)`` of the rows, with every index of the
table in place, in pages of the pipeline's size, one transaction per page. Ours: ``load_batch`` (the
pipeline's load stage: UpsertEntities, edge/ref replacement, DLQ clean-up) on the same rows and pages.
Two cases, each against an empty table state of its own:

- all-new: every row is inserted (target ratio >= 0.8, issue 15 §2);
- all-changed: every row exists with another content hash and is rewritten (target >= 0.6).

The load path's time includes building each row from its Entity (normalisation and the content hash);
the baseline's rows are built before its clock starts. A third line splits the difference: the
``UpsertEntities`` statement alone on the same prebuilt rows, pages and commits (what is left of the load
path's time beyond it is Python: the row build and the page's bookkeeping).

Entities carry no edges or refs here, so both sides write the same single table.

Wall times move with the host; so the bench also prints, per variant, the CPU each side spent a row in
the best round: this process's thread (``time.thread_time``: the row build, psycopg's encoding, COPY's
row dumping) and the PostgreSQL backend that served it (psutil). Those split the gap into the server's
work and ours even when the host's speed drifts between rounds.

    python bench/load_vs_copy.py [--rows 20000] [--page 100] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psutil
import psycopg
from psycopg.types.json import Jsonb

from app.db.connect import connect
from app.pipeline.load import Batch, load_batch
from app.pipeline.transform import entity_row
from app.queries import entities as q
from bench._cpu import cpu
from bench._db import bench_database
from connectors.base import Acl, Entity


class Timed:
    """Wall seconds of a block, with the CPU seconds of this thread and of the connection's backend."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.backend = psutil.Process(conn.info.backend_pid)
        self.wall = self.ours = self.server = 0.0

    def _server(self) -> float:
        return cpu([self.backend])

    def __enter__(self) -> Timed:
        self._start = (time.perf_counter(), time.thread_time(), self._server())
        return self

    def __exit__(self, *exc: object) -> None:
        wall, ours, server = self._start
        self.wall = time.perf_counter() - wall
        self.ours = time.thread_time() - ours
        self.server = self._server() - server


COLUMNS = (
    "source_id, source_type, source_entity_id, natural_key, container, status, title, body, url, author, "
    "source_created_at, source_updated_at, metadata, acl_principals, aliases, out_of_scope, content_hash"
)


def make_entities(n: int, version: int) -> list[Entity]:
    base = datetime(2026, 1, 1, tzinfo=UTC)
    return [
        Entity(
            source_type="ticket",
            source_entity_id=str(10000 + i),
            status="final" if i % 3 else "draft",
            title=f"PROJ-{i} Login fails on page {i % 97} (v{version})",
            text=("The login form rejects valid credentials after the session expires. " * 6) + f"v{version}",
            url=f"https://jira.example.com/browse/PROJ-{i}",
            author=f"user{i % 50}@example.com",
            created_at=base + timedelta(minutes=i),
            updated_at=base + timedelta(minutes=i + version),
            acl=Acl(("group:jira:dev", f"user:user{i % 50}@example.com")),
            metadata={"priority": "High", "labels": ["auth", "web"], "sprint": f"S{i % 12}", "version": version},
            natural_key=f"PROJ-{i}",
            container="PROJ",
        )
        for i in range(n)
    ]


def copy_rows(conn: psycopg.Connection[Any], source_id: int, rows: list[dict[str, Any]], page: int) -> Timed:
    types = [
        "int8",
        "text",
        "text",
        "text",
        "text",
        "text",
        "text",
        "text",
        "text",
        "text",
        "timestamptz",
        "timestamptz",
        "jsonb",
        "text[]",
        "text[]",
        "bool",
        "text",
    ]
    with Timed(conn) as timed:
        for k in range(0, len(rows), page):
            _copy_page(conn, source_id, rows[k : k + page], types)
    return timed


def _timestamp(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def _copy_page(conn: psycopg.Connection[Any], source_id: int, rows: list[dict[str, Any]], types: list[str]) -> None:
    with conn.cursor() as cur, cur.copy(f"copy entities ({COLUMNS}) from stdin (format binary)") as cp:
        cp.set_types(types)
        for r in rows:
            cp.write_row(
                (
                    source_id,
                    r["source_type"],
                    r["source_entity_id"],
                    r["natural_key"],
                    r["container"],
                    r["status"],
                    r["title"],
                    r["body"],
                    r["url"],
                    r["author"],
                    _timestamp(r["source_created_at"]),
                    _timestamp(r["source_updated_at"]),
                    Jsonb(r["metadata"]),
                    r["acl_principals"],
                    r["aliases"],
                    r["out_of_scope"],
                    r["content_hash"],
                )
            )
    conn.commit()


def load_rows(conn: psycopg.Connection[Any], source_id: int, entities: list[Entity], page: int) -> Timed:
    with Timed(conn) as timed:
        for k in range(0, len(entities), page):
            # As the pipeline runs it for a source whose dead-letter queue is empty (the common case).
            load_batch(
                conn,
                source_id=source_id,
                run_id=0,
                batch=Batch(entities=entities[k : k + page]),
                record_seen=False,
                clear_dead_letters=False,
            )
            conn.commit()
    return timed


def upsert_rows(conn: psycopg.Connection[Any], source_id: int, rows: list[dict[str, Any]], page: int) -> Timed:
    """The generated UpsertEntities alone, on rows built before the clock starts."""
    with Timed(conn) as timed:
        for k in range(0, len(rows), page):
            q.upsert_entities(conn, source_id=source_id, run_id=0, rows=rows[k : k + page])
            conn.commit()
    return timed


def reset(conn: psycopg.Connection[Any]) -> int:
    conn.execute("truncate entities cascade")
    row = conn.execute(
        "insert into sources (name, connector_type) values (%s, 'jira') returning id", (f"bench-{time.monotonic_ns()}",)
    ).fetchone()
    conn.commit()
    assert row is not None
    return int(row[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--page", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    v1, v2 = make_entities(args.rows, 1), make_entities(args.rows, 2)
    rows1 = [entity_row(e) for e in v1]
    best: dict[str, Timed] = {}

    def keep(key: str, timed: Timed) -> None:
        if key not in best or timed.wall < best[key].wall:
            best[key] = timed

    with bench_database() as url, connect(url) as conn:
        for _ in range(args.repeats):
            sid = reset(conn)
            keep("copy_new", copy_rows(conn, sid, rows1, args.page))
            sid = reset(conn)
            keep("load_new", load_rows(conn, sid, v1, args.page))
            # all-changed: the table holds v1, the load rewrites every row with v2
            keep("load_changed", load_rows(conn, sid, v2, args.page))
            sid = reset(conn)
            keep("statement_new", upsert_rows(conn, sid, rows1, args.page))
    n = args.rows
    print(f"rows={n} page={args.page} best of {args.repeats}")
    copy = best["copy_new"].wall
    print(f"  binary COPY (all-new)     {n / copy:>9,.0f} rows/s")
    for label, key, target in (("all-new", "load_new", 0.8), ("all-changed", "load_changed", 0.6)):
        ratio = copy / best[key].wall
        print(f"  load path   ({label:11}) {n / best[key].wall:>9,.0f} rows/s  ratio {ratio:.2f} (target >= {target})")
    alone = best["statement_new"].wall
    print(
        f"  UpsertEntities alone, rows prebuilt (all-new) {n / alone:>9,.0f} rows/s  ratio {copy / alone:.2f}"
        f"  (the rest of the load path: {(best['load_new'].wall - alone) / n * 1e6:.1f} us a row of Python)"
    )
    print("  CPU a row in the best round, us: this thread (ours) + the PostgreSQL backend (server)")
    for label, key in (
        ("binary COPY (all-new)", "copy_new"),
        ("load path (all-new)", "load_new"),
        ("load path (all-changed)", "load_changed"),
        ("UpsertEntities alone (all-new)", "statement_new"),
    ):
        ours, server, wall = (best[key].ours / n * 1e6, best[key].server / n * 1e6, best[key].wall / n * 1e6)
        print(f"    {label:31} ours {ours:6.1f}  server {server:6.1f}  wall {wall:6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
