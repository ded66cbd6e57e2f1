"""A page of the dead-letter queue by reason reads that page, not the queue (decision 87).

A storm (a source whose payloads changed shape parks every item as `malformed`) fills the queue with one
reason; the operator then asks for the items that failed for another reason, of that source or of one
whose items were parked after the storm. ListDeadLetters pages a source's queue oldest first, keyset on
id; through the primary key those pages read the whole storm first (here 4,000 rows for each), through
dead_letters_reason_source_idx only their own entries. Each page is asked for eight times on one
connection with other filters in between, past psycopg's prepare threshold and PostgreSQL's five custom
plans: PostgreSQL's generic plan for the statement did not use the index (the statement is now sent
unprepared, `-- plan: custom`; without that the fifth round read 4,189 rows).
"""

from __future__ import annotations

from typing import Any

import psycopg

from app.queries import dead_letters as dq
from tests.sync.table_reads import rows_read

STORM = 4000


def _rows_read(conn: psycopg.Connection[Any]) -> int:
    return rows_read(conn, "dead_letters")


def test_a_reason_page_after_a_storm_reads_its_own_items(fresh_db_url: str) -> None:
    with psycopg.connect(fresh_db_url) as conn:  # one transaction, rolled back
        storm, later = (
            int(r[0])
            for r in conn.execute(
                "insert into sources (name, connector_type) values ('storm', 'jira'), ('later', 'slack') returning id"
            ).fetchall()
        )
        # The storm's items first (a few of them for permission, parked before it), then the other source's.
        conn.execute(
            "insert into dead_letters (source_id, source_type, source_entity_id, reason)"
            " select %(storm)s, 'issue', 'S-' || g, case when g <= 60 then 'permission' else 'malformed' end"
            " from generate_series(1, %(n)s) g",
            {"storm": storm, "n": STORM},
        )
        conn.execute(
            "insert into dead_letters (source_id, source_type, source_entity_id, reason)"
            " select %s, 'message', 'M-' || g, (array['not_found', 'permission'])[1 + g %% 2]"
            " from generate_series(1, 200) g",
            (later,),
        )
        conn.execute("analyze dead_letters")

        def page(source_id: int, reason: str | None, after_id: int | None) -> list[Any]:
            return list(
                dq.list_dead_letters(
                    conn, source_id=source_id, reason=reason, source_type=None, after_id=after_id, lim=51
                )
            )

        for round_ in range(8):
            page(storm, None, None)  # the storm's own first page, a different plan's parameters
            for source_id, reason, cursor_at in ((storm, "permission", 10), (later, "not_found", 0)):
                first = page(source_id, reason, None)
                before = _rows_read(conn)
                rows = page(source_id, reason, first[cursor_at].id)
                read = _rows_read(conn) - before
                assert rows and {r.source_id for r in rows} == {source_id}
                assert reason is None or {r.reason for r in rows} == {reason}
                assert [r.id for r in rows] == sorted(r.id for r in rows) and rows[0].id > first[cursor_at].id
                assert read < 120, f"round {round_}, {source_id}/{reason}: {read} rows of dead_letters read for a page"
        conn.rollback()
