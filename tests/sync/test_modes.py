"""Full -> incremental -> reconciliation against the Jira emulator (seed 001 "Режимы", seed 000 "Удаления")."""

from __future__ import annotations

from typing import Any

import psycopg

from app.secrets import Keyring
from tests.sync.conftest import Jira, add_source, live_ids, scalar, sync


def _entity_updates(conn: psycopg.Connection[Any], probe: psycopg.Connection[Any]) -> int:
    """n_tup_upd of entities, after making the pipeline's backend publish its pending stats."""
    conn.execute("select pg_stat_force_next_flush()")
    conn.commit()  # the backend flushes when it goes idle after this commit
    conn.execute("select 1")
    conn.commit()
    probe.execute("select pg_stat_clear_snapshot()")
    return int(scalar(probe, "select n_tup_upd from pg_stat_user_tables where relname = 'entities'"))


def test_full_run_loads_every_issue_once(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)

    outcome, run = sync(conn, keyring, source_id, "full")

    assert (outcome.state, run.state, run.run_type) == ("succeeded", "succeeded", "full")
    assert run.entities_done == 30 and run.error_count == 0
    assert live_ids(probe, source_id) == [jira.id(i) for i in range(30)]


def test_incremental_rewrites_only_the_edited_issues(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    sync(conn, keyring, source_id, "full")
    edited = [3, 11, 20]
    for i in edited:
        jira.patch(jira.key(i), summary=f"Edited summary {i}")
    stamps_before = dict(probe.execute("select source_entity_id, updated_at from entities").fetchall())
    updates_before = _entity_updates(conn, probe)

    outcome, run = sync(conn, keyring, source_id, "incremental")

    assert outcome.state == "succeeded"
    stamps_after = dict(probe.execute("select source_entity_id, updated_at from entities").fetchall())
    assert sorted(k for k in stamps_before if stamps_before[k] != stamps_after[k]) == [jira.id(i) for i in edited]
    # Besides the edited rows, the only writes are provenance touches of rows re-fetched unchanged in
    # the look-back window (issue 12, item 5): last_fetched_at / last_run_id, updated_at kept.
    touched = scalar(
        probe,
        "select count(*) from entities where last_run_id = %s and not (source_entity_id = any(%s))",
        (run.id, [jira.id(i) for i in edited]),
    )
    assert _entity_updates(conn, probe) - updates_before == len(edited) + touched


def test_incremental_keeps_the_epic_edge_of_an_edited_issue(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    sync(conn, keyring, source_id, "full")
    child, epic = 20, 0  # ALPHA-6 belongs to epic ALPHA-1
    edge = (
        "select count(*) from entity_edges g join entities e on e.id = g.from_entity_id "
        "where e.source_entity_id = %s and g.relation = 'epic' and g.target_source_entity_id = %s"
    )
    assert scalar(probe, edge, (jira.id(child), jira.id(epic))) == 1
    jira.patch(jira.key(child), summary="Edited")

    sync(conn, keyring, source_id, "incremental")

    assert scalar(probe, edge, (jira.id(child), jira.id(epic))) == 1


def test_incremental_rewrites_only_the_edited_issues_when_no_epic_link_is_involved(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira_factory: Any
) -> None:
    # Only epics (indexes 0-3 and 200 with 4 projects) are edited or re-fetched, so what is measured is the
    # content-hash skip itself. Issue 200 is the last one, alone in its minute.
    jira: Jira = jira_factory(201)
    probe.execute("update platform_settings set value = '1' where key = 'incremental_lookback'")
    source_id = add_source(conn, keyring, jira)
    sync(conn, keyring, source_id, "full")
    edited = [0, 1, 2]
    for i in edited:
        jira.patch(jira.key(i), summary=f"Edited summary {i}")
    untouched = probe.execute(
        "select source_entity_id, xmin::text, updated_at from entities where source_entity_id = any(%s) order by 1",
        ([jira.id(5), jira.id(200)],),
    ).fetchall()
    updates_before = _entity_updates(conn, probe)

    outcome, run = sync(conn, keyring, source_id, "incremental")

    assert (outcome.state, run.run_type) == ("succeeded", "incremental")
    # The edited epics only: issue 200 comes back in the overlap window, but the watermark holds it at
    # exactly its boundary (issue 12, item 4), so it is not loaded again.
    assert run.entities_done == len(edited)
    assert _entity_updates(conn, probe) - updates_before == len(edited)
    assert (
        probe.execute(
            "select source_entity_id, xmin::text, updated_at from entities where source_entity_id = any(%s) order by 1",
            ([jira.id(5), jira.id(200)],),
        ).fetchall()
        == untouched
    )
    titles = dict(
        probe.execute(
            "select source_entity_id, title from entities where source_entity_id = any(%s)",
            ([jira.id(i) for i in edited],),
        ).fetchall()
    )
    assert titles == {jira.id(i): f"Edited summary {i}" for i in edited}


def test_reconciliation_soft_deletes_issues_gone_at_the_source(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    sync(conn, keyring, source_id, "full")
    gone = [jira.id(4), jira.id(17)]
    status_before = dict(
        probe.execute("select source_entity_id, status from entities where source_entity_id = any(%s)", (gone,))
    )
    jira.delete(jira.key(4))
    jira.delete(jira.key(17))

    outcome, run = sync(conn, keyring, source_id, "reconciliation")

    assert (outcome.state, run.run_type, outcome.deleted) == ("succeeded", "reconciliation", 2)
    rows = probe.execute(
        "select source_entity_id, status, deleted_at is not null from entities where source_entity_id = any(%s)",
        (gone,),
    ).fetchall()
    assert {r[0]: (r[1], r[2]) for r in rows} == {sid: (status_before[sid], True) for sid in gone}
    live = live_ids(probe, source_id)
    assert len(live) == 28 and not set(gone) & set(live)


def test_reconciliation_restores_a_returned_issue_with_its_old_status(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    jira.patch(jira.key(6), status="Done")
    sync(conn, keyring, source_id, "full")
    row_before = probe.execute("select id, status from entities where source_entity_id = %s", (jira.id(6),)).fetchone()
    assert row_before is not None and row_before[1] == "final"
    jira.delete(jira.key(6))
    sync(conn, keyring, source_id, "reconciliation")
    assert jira.id(6) not in live_ids(probe, source_id)
    jira.restore(jira.key(6))

    outcome, _ = sync(conn, keyring, source_id, "reconciliation")

    assert outcome.state == "succeeded" and outcome.deleted == 0
    row_after = probe.execute(
        "select id, status, deleted_at from entities where source_entity_id = %s", (jira.id(6),)
    ).fetchone()
    assert row_after == (row_before[0], "final", None)
    assert jira.id(6) in live_ids(probe, source_id)


def test_failed_incremental_run_leaves_the_cursor_where_it_was(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira_factory: Any
) -> None:
    jira: Jira = jira_factory(1000)
    source_id = add_source(conn, keyring, jira)
    sync(conn, keyring, source_id, "full")
    cursor_before = scalar(probe, "select incremental_cursor from sources where id = %s", (source_id,))
    assert cursor_before and cursor_before["updated"]
    # Nine or more pages of 100: more than the pipeline fetches ahead of the first commit (DEFAULT_PREFETCH queued, one
    # being built), so the run loads newer items and still meets the fault before the end.
    for i in range(900):
        jira.patch(jira.key(i), labels=["edited"])

    def break_after_first_page(progress: Any) -> None:
        jira.fault(status=500, ratio=1.0, retry_after=0)

    outcome, run = sync(conn, keyring, source_id, "incremental", on_progress=break_after_first_page)

    assert (outcome.state, run.state) == ("failed", "failed")
    assert run.entities_done is not None and run.entities_done > 0
    assert scalar(probe, "select incremental_cursor from sources where id = %s", (source_id,)) == cursor_before
