"""A page's identities are looked up one by one through the identity key, whatever the statistics say (decision 82).

TouchFetched, SoftDeleteItems, ListStoredHashesByIdentity and DeleteDeadLetters take a page of
(source_type, source_entity_id) pairs and find their rows. Written as a join of the page to the source's
rows, each was planned from statistics, and statistics rarely know the source a run is filling: a
database whose tables were never analysed, or a new source beside an analysed one, which the planner
takes for one row. Either way it read all of the source's rows for every page (a hash join of the whole
source, or a nested loop that scanned the page once per source row): TouchFetched took 21-25 ms a page
at 20,000 entities, a third of a no-change full re-sync. Each statement is explained here in both
states and must reach its table only by an index condition on the whole identity (or on the primary key,
for the row the look-up found): never by the source alone, never by a scan.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from app.queries import chunks as cq
from app.queries import dead_letters as dq
from app.queries import entities as eq

NEW = 2000  # rows of the source the statements look up
ANALYSED = 6000  # rows of another source, analysed before the new source's rows arrive
IDENTITY = ("source_id", "source_type", "source_entity_id")

STATEMENTS = {
    "TouchFetched": (eq.TOUCH_FETCHED, "entities", "entities_identity_key", "entities_pkey"),
    "SoftDeleteItems": (eq.SOFT_DELETE_ITEMS, "entities", "entities_identity_key", "entities_pkey"),
    "ListStoredHashesByIdentity": (cq.LIST_STORED_HASHES_BY_IDENTITY, "entities", "entities_identity_key", ""),
    "DeleteDeadLetters": (dq.DELETE_DEAD_LETTERS, "dead_letters", "dead_letters_item_key", "dead_letters_pkey"),
}


def _nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", ()):
        yield from _nodes(child)


def _source(conn: psycopg.Connection[Any], name: str, rows: int) -> int:
    row = conn.execute(
        "insert into sources (name, connector_type) values (%s, 'jira') returning id", (name,)
    ).fetchone()
    assert row is not None
    sid = int(row[0])
    conn.execute(
        "insert into entities (source_id, source_type, source_entity_id, natural_key, status, content_hash) "
        "select %s, 'ticket', g::text, 'K-' || g, 'final', 'h' from generate_series(1, %s) g",
        (sid, rows),
    )
    conn.execute(
        "insert into dead_letters (source_id, source_type, source_entity_id, reason) "
        "select %s, 'ticket', 'broken-' || g, 'malformed' from generate_series(1, %s) g",
        (sid, rows),
    )
    return sid


@pytest.mark.parametrize("state", ["never analysed", "beside an analysed source"])
@pytest.mark.parametrize("statement", sorted(STATEMENTS))
def test_a_page_statement_probes_the_identity_key(fresh_db_url: str, statement: str, state: str) -> None:
    query, table, identity_index, primary_key = STATEMENTS[statement]
    with psycopg.connect(fresh_db_url) as conn:  # one transaction, rolled back: nothing is kept
        if state == "beside an analysed source":
            _source(conn, "analysed", ANALYSED)
            conn.execute("analyze entities")
            conn.execute("analyze dead_letters")
        sid = _source(conn, "new", NEW)
        run = conn.execute(
            "insert into sync_runs (source_id, mode, trigger) values (%s, 'full', 'manual') returning id", (sid,)
        ).fetchone()
        assert run is not None
        page = Jsonb([{"source_type": "ticket", "source_entity_id": str(i)} for i in range(500, 600)])

        row = conn.execute(
            "explain (format json) " + query, {"source_id": sid, "run_id": run[0], "rows": page}
        ).fetchone()
        assert row is not None
        nodes = _nodes(row[0][0]["Plan"])
        scans = [n for n in nodes if n.get("Relation Name") == table and n["Node Type"] != "ModifyTable"]

        by_identity = [n for n in scans if n.get("Index Name") == identity_index]
        assert len(by_identity) == 1, [n["Node Type"] for n in scans]
        assert by_identity[0]["Node Type"] in ("Index Scan", "Index Only Scan"), by_identity[0]["Node Type"]
        cond = by_identity[0]["Index Cond"]
        assert all(column in cond for column in IDENTITY), cond
        for other in scans:
            if other is not by_identity[0]:  # the row the look-up found, re-read to update or delete it
                assert other.get("Index Name") == primary_key, other["Node Type"]
                assert other["Index Cond"].startswith("(id = "), other["Index Cond"]
        conn.rollback()
