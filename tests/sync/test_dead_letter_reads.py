"""A page of the dead-letter queue reads that page, not the queue (decisions 87, 88).

A storm (a source whose payloads changed shape parks every item as `malformed`) fills the queue with one
reason; the operator then asks for the items that failed for another reason, of that source or of one
whose items were parked after the storm, or for that other source's whole queue. ListDeadLetters pages a
source's queue oldest first, keyset on id; through the primary key those pages read the whole storm first
(here 4,000 rows for each), through dead_letters_reason_source_idx, one reason at a time, only their own
entries. Each page is asked for eight times on one connection with other filters in between, past
psycopg's prepare threshold and PostgreSQL's five custom plans, so a generic plan is tested too (a
generic plan of decision 87's statement read 4,189 rows from the fifth round on).
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

        def expected(source_id: int, reason: str | None, after_id: int) -> list[int]:
            return [
                int(r[0])
                for r in conn.execute(
                    "select id from dead_letters where source_id = %s and (%s::text is null or reason = %s)"
                    " and id > %s order by id limit 51",
                    (source_id, reason, reason, after_id),
                ).fetchall()
            ]

        for round_ in range(8):
            page(storm, "malformed", None)  # the storm's own reason, a different plan's parameters
            for source_id, reason, cursor_at in (
                (storm, "permission", 10),
                (later, "not_found", 0),
                (later, None, 20),  # no reason: the whole queue of a source parked after the storm
                (storm, None, 30),  # the storm source's own queue: both its reasons, merged by id
            ):
                before = _rows_read(conn)
                first = page(source_id, reason, None)
                first_read = _rows_read(conn) - before
                rows = page(source_id, reason, first[cursor_at].id)
                read = _rows_read(conn) - before - first_read
                assert [r.id for r in first] == expected(source_id, reason, 0)
                assert [r.id for r in rows] == expected(source_id, reason, first[cursor_at].id)
                assert rows and {r.source_id for r in rows} == {source_id}
                assert reason is None or {r.reason for r in rows} == {reason}
                # A page reads at most `lim` per reason the source has (here two), a few rows more when a plan
                # filters some; reading the storm is 4,000.
                for which, n in (("first", first_read), ("second", read)):
                    assert n < 120 * 2, f"round {round_}, {source_id}/{reason}, {which} page: {n} rows read"
        conn.rollback()
