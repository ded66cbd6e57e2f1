"""load_batch against a real database with the awkward entities of tests/test_transform.py: NUL in text and
metadata, naive, UTC and offset timestamps, integers beyond 64 bits, repeated principals. The page must
store what the row says, and loading the same page again must write nothing (the content hash of the
stored row is the one computed now)."""

from __future__ import annotations

import dataclasses

from app.db.connect import connect
from app.pipeline.load import Batch, load_batch
from tests.test_transform import awkward_entities


def test_a_page_of_awkward_entities_loads_and_an_equal_reload_writes_nothing(fresh_db_url: str) -> None:
    cases = awkward_entities()
    # One entity with a NUL inside its metadata as well (jsonb cannot hold it; it is dropped).
    cases["plain"] = dataclasses.replace(cases["plain"], metadata={**cases["plain"].metadata, "note": "a\x00b"})
    entities = list(cases.values())
    with connect(fresh_db_url) as conn:
        row = conn.execute("insert into sources (name, connector_type) values ('load', 'jira') returning id").fetchone()
        assert row is not None
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
        assert meta is not None and meta[0]["note"] == "ab"
        big = conn.execute(
            "select metadata->>'custom' from entities where source_id = %s and source_entity_id = '1'", (source_id,)
        ).fetchone()
        assert big is not None and big[0] == str(2**70)

        before = conn.execute("select sum(xmin::text::bigint) from entities").fetchone()
        again = load_batch(conn, source_id=source_id, run_id=1, batch=Batch(entities=entities), record_seen=False)
        conn.commit()
        assert (again.written, again.unchanged) == (0, len(entities))
        assert conn.execute("select sum(xmin::text::bigint) from entities").fetchone() == before
