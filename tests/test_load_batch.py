"""load_batch against a real database with the awkward entities of tests/test_transform.py: NUL in text and
metadata, naive, UTC and offset timestamps, integers beyond 64 bits, repeated principals. The page must
store what the row says, and loading the same page again must write nothing (the content hash of the
stored row is the one computed now)."""

from __future__ import annotations

import dataclasses

from app.db.connect import connect
from app.pipeline.load import Batch, load_batch
from connectors.base import ItemError
from tests.test_transform import awkward_entities


def test_a_page_of_awkward_entities_loads_and_an_equal_reload_writes_nothing(fresh_db_url: str) -> None:
    cases = awkward_entities()
    # One entity with a NUL inside its metadata as well (jsonb cannot hold it; it is dropped).
    cases["plain"] = dataclasses.replace(cases["plain"], metadata={**cases["plain"].metadata, "note": "a\x00b"})
    entities = list(cases.values())
    with connect(fresh_db_url) as conn:
        row = conn.execute("insert into sources (name, connector_type) values ('load', 'jira') returning id").fetchone()
        assert row is not None and isinstance(row[0], int)
        source_id = int(row[0])
        first = load_batch(conn, source_id=source_id, run_id=1, batch=Batch(entities=entities), record_seen=False)
        conn.commit()
        assert (first.written, first.unchanged) == (len(entities), 0)

        for entity in entities:
            stored = conn.execute(
                "select title, source_created_at, source_updated_at, acl_principals, metadata from entities"
                " where source_id = %s and source_entity_id = %s",
                (source_id, entity.source_entity_id),
            ).fetchone()
            assert stored is not None
            assert stored[0] == entity.title.replace("\x00", "")
            # The stored timestamps are the instants the connector gave (naive ones read in the session zone).
            for value, got in ((entity.created_at, stored[1]), (entity.updated_at, stored[2])):
                if value is None:
                    assert got is None
                else:
                    expected = conn.execute("select %s::text::timestamptz", (value.isoformat(),)).fetchone()
                    assert expected is not None and got == expected[0]
            principals = entity.acl.principals
            assert stored[3] == (None if principals is None else sorted(set(principals)))
        meta = conn.execute(
            "select metadata from entities where source_id = %s and source_entity_id = '10001'", (source_id,)
        ).fetchone()
        assert meta is not None and isinstance(meta[0], dict) and meta[0]["note"] == "ab"
        big = conn.execute(
            "select metadata->>'custom' from entities where source_id = %s and source_entity_id = '1'", (source_id,)
        ).fetchone()
        assert big is not None and big[0] == str(2**70)

        before = conn.execute("select sum(xmin::text::bigint) from entities").fetchone()
        again = load_batch(conn, source_id=source_id, run_id=1, batch=Batch(entities=entities), record_seen=False)
        conn.commit()
        assert (again.written, again.unchanged) == (0, len(entities))
        assert conn.execute("select sum(xmin::text::bigint) from entities").fetchone() == before


def test_a_page_of_failures_parks_each_item_once_whatever_its_message_holds(fresh_db_url: str) -> None:
    """A page's failures are one statement (decision 85): an item the page lists twice is parked once with its
    last failure, and a message quoting a NUL from the payload cannot fail the page (the page travels as
    JSON, whose dumper drops NUL: app/db/jsonb.py)."""
    errors = [
        ItemError("ticket", "P-1", "malformed", "bad field \x00 in summary"),
        ItemError("ticket", "P-2", "permission", "403"),
        ItemError("ticket", "P-1", "not_found", "gone \x00 now"),
    ]
    with connect(fresh_db_url) as conn:
        row = conn.execute("insert into sources (name, connector_type) values ('dlq', 'jira') returning id").fetchone()
        assert row is not None and isinstance(row[0], int)
        source_id = int(row[0])
        run = conn.execute(
            "insert into sync_runs (source_id, mode, trigger, state, started_at) "
            "values (%s, 'full', 'manual', 'running', now()) returning id",
            (source_id,),
        ).fetchone()
        assert run is not None and isinstance(run[0], int)
        result = load_batch(
            conn, source_id=source_id, run_id=int(run[0]), batch=Batch(errors=errors), record_seen=False
        )
        conn.commit()
        assert result.dead_letters == 3
        parked = conn.execute(
            "select source_entity_id, reason, error_detail, attempts from dead_letters "
            "where source_id = %s order by id",
            (source_id,),
        ).fetchall()
        assert parked == [("P-2", "permission", "403", 1), ("P-1", "not_found", "gone  now", 1)]
        totals = conn.execute(
            "select reason, items from dead_letter_totals where source_id = %s order by reason", (source_id,)
        ).fetchall()
        assert totals == [("not_found", 1), ("permission", 1)]
        conn.execute("delete from sources where id = %s", (source_id,))
        conn.commit()
