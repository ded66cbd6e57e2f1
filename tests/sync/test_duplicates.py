"""Duplicate collapse and note merge (seed 001 reconciliation, seed 003 "Слияние с заметкой под ключом")."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg

from app.queries import entities as eq
from app.secrets import Keyring
from tests.sync.conftest import Jira, add_source, live_ids, scalar, sync

EARLY = datetime(2025, 1, 1, tzinfo=UTC)
LATE = datetime(2025, 6, 1, tzinfo=UTC)
DUPLICATE_ID = "legacy-ALPHA-2"  # an identity the source no longer lists


def _note(
    probe: psycopg.Connection[Any], source_id: int, sid: str, when: datetime, by: str, **fields: str | None
) -> None:
    probe.execute(
        "insert into entity_notes (source_id, source_type, source_entity_id, fact_status, work_kind, done_text,"
        " rest_text, owner_note, updated_by, updated_at) values (%s, 'ticket', %s, %s, %s, %s, %s, %s, %s, %s)",
        (
            source_id,
            sid,
            fields.get("fact_status"),
            fields.get("work_kind"),
            fields.get("done_text"),
            fields.get("rest_text"),
            fields.get("owner_note"),
            by,
            when,
        ),
    )


def _plant_duplicate(probe: psycopg.Connection[Any], source_id: int, survivor: str) -> None:
    """A second live row for the survivor's record, named in the survivor's aliases, each with a note."""
    probe.execute(
        "insert into entities (source_id, source_type, source_entity_id, natural_key, status, content_hash)"
        " values (%s, 'ticket', %s, 'ALPHA-2', 'draft', 'legacy')",
        (source_id, DUPLICATE_ID),
    )
    probe.execute(
        "update entities set aliases = array[%s] where source_id = %s and source_entity_id = %s",
        (DUPLICATE_ID, source_id, survivor),
    )
    _note(probe, source_id, survivor, EARLY, "lead", owner_note="спросить ИБ", work_kind="")
    _note(probe, source_id, DUPLICATE_ID, LATE, "analyst", work_kind="Аналитика", owner_note="")


def _merged(probe: psycopg.Connection[Any], source_id: int) -> list[tuple[Any, ...]]:
    return probe.execute(
        "select source_entity_id, work_kind, owner_note, updated_by from entity_notes where source_id = %s",
        (source_id,),
    ).fetchall()


def test_moved_issue_stays_one_live_entity_under_its_new_key(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    sync(conn, keyring, source_id, "full")
    moved = jira.patch(jira.key(4), project="BETA")

    outcome, _ = sync(conn, keyring, source_id, "reconciliation")

    assert (outcome.state, outcome.deleted) == ("succeeded", 0)
    rows = probe.execute(
        "select natural_key, container from live_entities where source_id = %s and source_entity_id = %s",
        (source_id, jira.id(4)),
    ).fetchall()
    assert rows == [(moved["key"], "BETA")]
    live = live_ids(probe, source_id)
    assert len(live) == len(set(live)) == 30


def test_moved_issue_keeps_its_previous_key_as_an_alias(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    sync(conn, keyring, source_id, "full")
    old_key = jira.key(4)
    jira.patch(old_key, project="BETA")

    sync(conn, keyring, source_id, "reconciliation")

    aliases = scalar(probe, "select aliases from entities where source_entity_id = %s", (jira.id(4),))
    assert old_key in aliases


def test_collapse_merges_the_duplicates_note_field_by_field(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    _, run = sync(conn, keyring, source_id, "full")
    survivor = jira.id(1)
    _plant_duplicate(probe, source_id, survivor)

    collapsed = eq.collapse_duplicates(conn, source_id=source_id, run_id=run.id)
    conn.commit()

    assert collapsed == 1
    assert _merged(probe, source_id) == [(survivor, "Аналитика", "спросить ИБ", "analyst")]
    assert DUPLICATE_ID not in live_ids(probe, source_id)
    assert survivor in live_ids(probe, source_id)


def test_collapse_keeps_the_later_notes_updated_at(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    _, run = sync(conn, keyring, source_id, "full")
    _plant_duplicate(probe, source_id, jira.id(1))

    eq.collapse_duplicates(conn, source_id=source_id, run_id=run.id)
    conn.commit()

    assert scalar(probe, "select updated_at from entity_notes where source_id = %s", (source_id,)) == LATE


def test_reconciliation_collapses_a_duplicate_and_merges_its_note(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    sync(conn, keyring, source_id, "full")
    survivor = jira.id(1)
    _plant_duplicate(probe, source_id, survivor)

    outcome, _ = sync(conn, keyring, source_id, "reconciliation")

    assert outcome.state == "succeeded"
    assert DUPLICATE_ID not in live_ids(probe, source_id)
    assert _merged(probe, source_id) == [(survivor, "Аналитика", "спросить ИБ", "analyst")]
