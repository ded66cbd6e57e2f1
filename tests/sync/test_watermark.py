"""The incremental cursor is a watermark (issue 12, item 4): boundary time plus the ids seen at it.

An item updated while a run pages is never skipped; items already taken at exactly the boundary are
not loaded again; a legacy time-only cursor skips nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg

from app.pipeline.run import Progress
from app.pipeline.watermark import Watermark
from app.secrets import Keyring
from tests.sync.conftest import JiraFactory, add_source, scalar, sync

T = datetime(2026, 11, 30, 12, tzinfo=UTC)


def test_watermark_keeps_the_ids_at_the_boundary_only() -> None:
    mark = Watermark().advance("a", T).advance("b", T.replace(minute=1)).advance("c", T.replace(minute=1))

    assert mark.to_cursor() == {"updated": T.replace(minute=1).isoformat(), "ids": ["b", "c"]}
    assert mark.already_seen("b", T.replace(minute=1))
    assert not mark.already_seen("b", T.replace(minute=2))  # updated again since: loaded
    assert not mark.already_seen("d", T.replace(minute=1))  # same time, never seen: loaded
    assert not Watermark.from_cursor({"updated": T.isoformat()}).already_seen("a", T)  # legacy cursor


def _title(probe: psycopg.Connection[Any], source_id: int, sid: str) -> str:
    query = "select title from entities where source_id = %s and source_entity_id = %s"
    return str(scalar(probe, query, (source_id, sid)))


def test_an_item_updated_while_a_run_pages_is_loaded_by_the_next_incremental_run(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira_factory: JiraFactory
) -> None:
    jira = jira_factory(250)
    source_id = add_source(conn, keyring, jira)
    probe.execute("update platform_settings set value = '1' where key = 'incremental_lookback'")
    sync(conn, keyring, source_id, "full")
    jira.patch(jira.key(3), summary="first change")
    raced: list[str] = []

    def race(progress: Progress) -> None:
        # After the first committed page: one already-paged item and one not yet paged change at the source.
        if not raced:
            raced.append(jira.patch(jira.key(3), summary="changed during the run")["key"])
            jira.patch(jira.key(7), summary="also changed during the run")

    outcome, _ = sync(conn, keyring, source_id, "incremental", on_progress=race)
    assert outcome.state == "succeeded"
    cursor = scalar(probe, "select incremental_cursor from sources where id = %s", (source_id,))
    assert set(cursor) == {"updated", "ids"} and cursor["ids"]

    sync(conn, keyring, source_id, "incremental")

    assert _title(probe, source_id, jira.id(3)) == "changed during the run"
    assert _title(probe, source_id, jira.id(7)) == "also changed during the run"


def test_items_taken_at_exactly_the_boundary_are_not_loaded_again(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira_factory: JiraFactory
) -> None:
    jira = jira_factory(30)
    source_id = add_source(conn, keyring, jira)
    probe.execute("update platform_settings set value = '1' where key = 'incremental_lookback'")
    sync(conn, keyring, source_id, "full")
    jira.patch(jira.key(4), summary="one change")
    _, first = sync(conn, keyring, source_id, "incremental")
    assert first.entities_done and first.entities_done >= 1

    _, second = sync(conn, keyring, source_id, "incremental")

    # Jira's JQL reads minutes, so the source returns the boundary item again; the watermark drops it.
    assert second.entities_done == 0
