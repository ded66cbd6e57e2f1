"""The tick's look-ups into the run journal read a few index entries per source, not its history (decision 81).

sync_runs is never pruned: a source polled every 15 minutes adds 35,000 runs a year, and the tick reads
each source's history every minute (ListScheduleState, ListAlertConditions). Here one source has 3,000
runs, with statistics as a long-lived table has them, and each statement must read fewer than 60 rows of
sync_runs (pg_stat_xact_user_tables). Before (the look-ups by index order and migration 27's indexes),
they read 6,402 and 6,002: every run of the source for each look-up of a rare kind of run, and the whole
journal sorted for the latest runs. Each half alone is not enough: the old queries with the new indexes
read 3,007 for the schedule, the new ones without them the same 6,402 and 6,002.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from app.queries import alerts as aq
from app.queries import completeness as cq
from app.queries import runs as rq
from app.queries import sources as sq
from tests.sync.table_reads import rows_read

RUNS = 3000


def _rows_read(conn: psycopg.Connection[Any]) -> int:
    return rows_read(conn, "sync_runs")


@pytest.mark.parametrize("statement", ["schedule", "alerts"])
def test_the_tick_reads_a_few_runs_per_source_whatever_the_history(fresh_db_url: str, statement: str) -> None:
    with psycopg.connect(fresh_db_url) as conn:  # one transaction, rolled back
        row = conn.execute(
            "insert into sources (name, connector_type) values ('history', 'jira') returning id"
        ).fetchone()
        assert row is not None
        # A full sync first, then polls (every 50th failed), a weekly reconciliation, one watchdog run.
        conn.execute(
            "insert into sync_runs (source_id, mode, trigger, state, created_at, started_at, finished_at, error_detail)"
            " select %(sid)s,"
            "   case when g = 1 then 'full' when g %% 700 = 1 and g > 1 then 'reconciliation' else 'incremental' end,"
            "   case when g = 1 then 'connect' when g = 1500 then 'watchdog' else 'schedule' end,"
            "   case when g %% 50 = 25 then 'failed' else 'succeeded' end,"
            "   t, t, t + interval '20 seconds', case when g %% 50 = 25 then 'boom' end"
            " from generate_series(1, %(n)s) g,"
            "   lateral (select now() - make_interval(mins => 15 * (%(n)s - g)) as t) x",
            {"sid": row[0], "n": RUNS},
        )
        conn.execute("analyze sync_runs")
        before = _rows_read(conn)

        if statement == "schedule":
            [state] = sq.list_schedule_state(conn)
            assert state.first_full is not None and state.last_reconciliation is not None
            assert state.last_watchdog is not None and state.last_poll is not None and state.last_success is not None
        else:
            conditions = aq.list_alert_conditions(conn, dlq_threshold=100, now=datetime.now(UTC), worker_silence=60)
            assert conditions == []  # the latest run succeeded

        assert _rows_read(conn) - before < 60
        conn.rollback()


def test_a_quiet_sources_history_page_reads_its_own_runs_not_the_journal(fresh_db_url: str) -> None:
    """GET /runs?source_id=… (ListRunsPage) of a source whose runs are the oldest in the journal reads that
    source's page through sync_runs_source_id_id_idx (decision 86). Without it the plan walks the journal
    backwards through the primary key and reads every newer run first: 5,050 rows here. The statement runs
    on one connection with other filters in between, past psycopg's prepare threshold and PostgreSQL's five
    custom plans: it is sent unprepared (`-- plan: custom`, decision 87), and a generic plan that could not
    use the index would be caught here."""
    with psycopg.connect(fresh_db_url) as conn:  # one transaction, rolled back
        quiet, busy = (
            int(r[0])
            for r in conn.execute(
                "insert into sources (name, connector_type) values ('quiet', 'jira'), ('busy', 'slack') returning id"
            ).fetchall()
        )
        # The quiet source's 200 runs first, then 5,000 of the busy one.
        conn.execute(
            "insert into sync_runs (source_id, mode, trigger, state, created_at, started_at, finished_at)"
            " select case when g <= 200 then %(quiet)s else %(busy)s end, 'incremental', 'schedule', 'succeeded',"
            "   t, t, t + interval '5 seconds'"
            " from generate_series(1, 5200) g, lateral (select now() - make_interval(mins => 5200 - g) as t) x",
            {"quiet": quiet, "busy": busy},
        )
        conn.execute("analyze sync_runs")
        filters: dict[str, Any] = {
            "state": None,
            "mode": None,
            "run_type": None,
            "trigger": None,
            "started_from": None,
            "started_to": None,
            "before_id": None,
        }
        for round_ in range(8):
            for other in ({"source_id": busy}, {"source_id": None, "state": "failed"}):
                rq.list_runs_page(conn, **{**filters, **other}, lim=51)
            before = _rows_read(conn)
            page = rq.list_runs_page(conn, **{**filters, "source_id": quiet}, lim=51)
            read = _rows_read(conn) - before
            assert [r.source_id for r in page] == [quiet] * 51
            assert read < 120, f"round {round_}: {read} rows of sync_runs read for a page of 51"
        conn.rollback()


@pytest.mark.parametrize("statement", ["schedule", "last_success", "metrics", "completeness"])
def test_a_failing_sources_last_success_reads_past_none_of_its_failures(fresh_db_url: str, statement: str) -> None:
    """The last success and the schedule's anchors are found without reading a failure streak (decision 89).

    One source succeeded once (its first full sync), then failed 3,000 polls in a row (a revoked credential);
    another never succeeded (3,000 failed full syncs). The tick (ListScheduleState) and each scrape
    (ListSourceLastSuccess, SummarizeSourcesForMetrics, LatestCompleteness) ask for the last success, the
    first full sync or the reconciliations. Through migration 27's indexes they walked every failed run
    first: 21,012 / 12,004 / 12,004 / 3,002 rows here; through migration 34's partial indexes a few."""
    with psycopg.connect(fresh_db_url) as conn:  # one transaction, rolled back
        failing, never = (
            int(r[0])
            for r in conn.execute(
                "insert into sources (name, connector_type) values ('failing', 'jira'), ('never', 'slack') returning id"
            ).fetchall()
        )
        conn.execute(
            "insert into sync_runs (source_id, mode, trigger, state, created_at, started_at, finished_at, error_detail)"
            " select s, case when s = %(never)s or g = 0 then 'full' else 'incremental' end, 'schedule',"
            "   case when s = %(failing)s and g = 0 then 'succeeded' else 'failed' end,"
            "   t, t, t + interval '20 seconds', case when s = %(never)s or g > 0 then 'HTTP 401' end"
            " from unnest(array[%(failing)s, %(never)s]::bigint[]) s, generate_series(0, %(n)s) g,"
            "   lateral (select now() - make_interval(mins => 15 * (%(n)s - g)) as t) x",
            {"failing": failing, "never": never, "n": RUNS},
        )
        conn.execute("analyze sync_runs")
        row = conn.execute(
            "select finished_at from sync_runs where source_id = %s and state = 'succeeded'", (failing,)
        ).fetchone()
        assert row is not None
        succeeded_at: datetime = row[0]
        before = _rows_read(conn)

        if statement == "schedule":
            states = {s.id: s for s in sq.list_schedule_state(conn)}
            assert states[failing].last_success == succeeded_at and states[failing].first_full is not None
            assert states[never].last_success is None and states[never].first_full is None
            assert states[never].last_reconciliation is None
        elif statement == "last_success":
            last = {s.id: s.last_success for s in sq.list_source_last_success(conn)}
            assert last == {failing: succeeded_at, never: None}
        elif statement == "completeness":
            assert cq.latest_completeness(conn) == []  # neither source was ever reconciled
        else:
            since = {s.source_id: s.seconds_since_success for s in sq.summarize_sources_for_metrics(conn)}
            failing_since = since[failing]
            assert since[never] is None and failing_since is not None
            assert failing_since >= (datetime.now(UTC) - succeeded_at).total_seconds() - 60

        read = _rows_read(conn) - before
        assert read < 60, f"{statement}: {read} rows of sync_runs read for two sources"
        conn.rollback()
