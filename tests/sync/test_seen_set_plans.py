"""The end-of-run statements that read a run's seen-set probe its primary key once per entity (decision 78).

run_seen_items is filled by every full or reconciliation run and emptied when it ends, so the planner
reads it with statistics that do not know this run's rows. Written as a plain NOT EXISTS, the anti-join
was planned as a nested loop that read all of the run's seen rows for each entity (quadratic: 235 ms at
2,000 entities, a tenth of a no-latency Jira run). Each statement is explained here in that state, a
freshly loaded source whose tables were never analysed, and must reach run_seen_items only through an
index condition on its whole key.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from app.queries import entities as eq

ENTITIES = 2000  # in the range where the unfenced anti-join was planned as a nested loop (500 to ~4,000)


def _nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", ()):
        yield from _nodes(child)


def _seen_set_scans(conn: psycopg.Connection[Any], query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    row = conn.execute("explain (format json) " + query, params).fetchone()
    assert row is not None
    return [n for n in _nodes(row[0][0]["Plan"]) if n.get("Relation Name") == "run_seen_items"]


@pytest.mark.parametrize("statement", ["FLAG_UNSEEN_AS_NEIGHBOURS", "SOFT_DELETE_UNSEEN", "COUNT_UNSEEN"])
def test_a_seen_set_statement_probes_the_seen_key_per_entity(fresh_db_url: str, statement: str) -> None:
    with psycopg.connect(fresh_db_url) as conn:  # one transaction, rolled back: nothing is analysed or kept
        source = conn.execute(
            "insert into sources (name, connector_type) values ('plans', 'jira') returning id"
        ).fetchone()
        assert source is not None
        sid = source[0]
        run = conn.execute(
            "insert into sync_runs (source_id, mode, trigger) values (%s, 'full', 'manual') returning id", (sid,)
        ).fetchone()
        assert run is not None
        conn.execute(
            "insert into entities (source_id, source_type, source_entity_id, status, content_hash) "
            "select %s, 'ticket', g::text, 'final', 'h' from generate_series(1, %s) g",
            (sid, ENTITIES),
        )
        conn.execute(
            "insert into run_seen_items (run_id, source_type, source_entity_id) "
            "select %s, 'ticket', g::text from generate_series(1, %s) g",
            (run[0], ENTITIES),
        )

        scans = _seen_set_scans(
            conn, getattr(eq, statement), {"source_id": sid, "run_id": run[0], "unread_containers": []}
        )

        assert len(scans) == 1
        scan = scans[0]
        assert scan["Node Type"] in ("Index Only Scan", "Index Scan"), scan["Node Type"]
        assert scan["Index Name"] == "run_seen_items_pkey"
        cond = scan["Index Cond"]
        assert all(column in cond for column in ("run_id", "source_type", "source_entity_id")), cond
        conn.rollback()
