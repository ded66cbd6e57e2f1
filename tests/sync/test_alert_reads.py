"""The failed-delivery sum reads the incidents that had a failed delivery, not every incident (decision 91).

alert_incidents is never pruned: one incident per episode, so a source whose runs fail and recover by turns
adds one every other run. GET /metrics sums their failed delivery attempts on every scrape
(SumAlertSendFailures). Here 5,000 incidents were delivered at once and 7 needed retries; the sum must
equal the Python sum and read fewer than 20 rows of alert_incidents. Without migration 36's partial index
and the statement's `send_failures > 0`, it read all 5,007.
"""

from __future__ import annotations

from typing import Any

import psycopg

from app.queries import alerts as aq
from tests.sync.table_reads import rows_read


def _rows_read(conn: psycopg.Connection[Any]) -> int:
    return rows_read(conn, "alert_incidents")


def test_the_failed_delivery_sum_reads_only_the_failed_incidents(fresh_db_url: str) -> None:
    with psycopg.connect(fresh_db_url) as conn:  # one transaction, rolled back
        conn.execute(
            "insert into alert_incidents (kind, subject, opened_at, resolved_at, send_failures)"
            " select 'run_failed', 'source:' || (g % 40), t, t + interval '15 minutes', 0"
            " from generate_series(1, 5000) g, lateral (select now() - make_interval(mins => 30 * g) as t) x"
        )
        failures = [1, 3, 2, 5, 1, 1, 4]
        for n in failures:  # a channel that refused some notifications, counted as the send_alert job does
            row = conn.execute(
                "insert into alert_incidents (kind, subject) values ('worker_gone', 'worker:' || gen_random_uuid())"
                " returning id"
            ).fetchone()
            assert row is not None
            for _ in range(n):
                aq.count_incident_send_failure(conn, id=int(row[0]))
        conn.execute("analyze alert_incidents")
        before = _rows_read(conn)
        assert aq.sum_alert_send_failures(conn) == sum(failures)
        read = _rows_read(conn) - before
        assert read < 20, f"{read} rows of alert_incidents read for the sum"
        conn.rollback()
