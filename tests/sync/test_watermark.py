"""The incremental cursor is a watermark (issue 12, item 4): boundary time plus the ids seen at it.

An item updated while a run pages is never skipped; items already taken at exactly the boundary are
not loaded again; a legacy time-only cursor skips nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.pipeline import checkpoint
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


_SEEN = st.lists(
    st.tuples(st.sampled_from("abcdef"), st.one_of(st.none(), st.integers(0, 3).map(lambda m: T.replace(minute=m))))
)


@given(start=_SEEN, seen=_SEEN)
def test_advancing_a_page_at_once_is_advancing_item_by_item(
    start: list[tuple[str, datetime | None]], seen: list[tuple[str, datetime | None]]
) -> None:
    """The run advances its watermark once per page (decision 125): the same watermark as one item at a
    time, from any watermark, over any order of times (equal, older, newer, unknown)."""
    mark = Watermark()
    for item_id, at in start:
        mark = mark.advance(item_id, at)
    one_by_one = mark
    for item_id, at in seen:
        one_by_one = one_by_one.advance(item_id, at)
    assert mark.advance_all(seen) == one_by_one


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


def test_a_bulk_import_s_boundary_is_kept_whole_in_the_cursor_and_capped_in_the_checkpoint(
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    jira_factory: JiraFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """130 issues given one update time, as a bulk import does, over two pages (decision 125): the run's
    checkpoint stores only its share of the boundary's ids, the cursor all of them, and the next incremental
    run, which the source answers with the same 130, loads none of them again."""
    jira = jira_factory(260)
    source_id = add_source(conn, keyring, jira)
    probe.execute("update platform_settings set value = '1' where key = 'incremental_lookback'")
    sync(conn, keyring, source_id, "full")
    at = datetime(2030, 1, 1, 12, tzinfo=UTC)
    touched = [jira.patch(jira.key(i), summary=f"imported {i}", updated=at.isoformat())["id"] for i in range(0, 260, 2)]
    monkeypatch.setattr(checkpoint, "BOUNDARY_IDS_KEPT", 7)

    outcome, first = sync(conn, keyring, source_id, "incremental")

    assert outcome.state == "succeeded" and first.entities_done == len(touched)
    saved = scalar(probe, "select checkpoint from sync_runs where id = %s", (first.id,))
    assert len(saved["boundary_ids"]) == 7 and set(saved["boundary_ids"]) <= set(touched)
    cursor = scalar(probe, "select incremental_cursor from sources where id = %s", (source_id,))
    assert datetime.fromisoformat(cursor["updated"]) == at and sorted(cursor["ids"]) == sorted(touched)
    assert _title(probe, source_id, jira.id(128)) == "imported 128"

    _, second = sync(conn, keyring, source_id, "incremental")

    assert second.entities_done == 0
