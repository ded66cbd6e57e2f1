"""Provenance and the completeness audit (issue 12, items 5 and 6) against a real database and emulator."""

from __future__ import annotations

from typing import Any

import psycopg

from app.secrets import Keyring
from tests.sync.conftest import Jira, JiraFactory, add_source, scalar, sync


def _provenance(probe: psycopg.Connection[Any], source_id: int) -> set[tuple[Any, ...]]:
    rows = probe.execute(
        "select last_run_id, last_fetched_at is not null from entities where source_id = %s and deleted_at is null",
        (source_id,),
    ).fetchall()
    return {tuple(r) for r in rows}


def test_every_fetched_entity_records_the_run_and_time_even_when_unchanged(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    _, first = sync(conn, keyring, source_id, "full")
    assert _provenance(probe, source_id) == {(first.id, True)}
    content = probe.execute(
        "select source_entity_id, content_hash, updated_at from entities where source_id = %s order by 1", (source_id,)
    ).fetchall()

    _, second = sync(conn, keyring, source_id, "full")

    assert _provenance(probe, source_id) == {(second.id, True)}
    # The content path still wrote nothing: same hashes, same updated_at.
    assert (
        probe.execute(
            "select source_entity_id, content_hash, updated_at from entities where source_id = %s order by 1",
            (source_id,),
        ).fetchall()
        == content
    )


def test_a_reconciliation_delete_records_the_run_and_reason_gone_at_source(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    sync(conn, keyring, source_id, "full")
    jira.delete(jira.key(4))

    _, run = sync(conn, keyring, source_id, "reconciliation")

    row = probe.execute(
        "select deleted_by_run_id, deleted_reason from entities where source_id = %s and source_entity_id = %s",
        (source_id, jira.id(4)),
    ).fetchone()
    assert row == (run.id, "gone_at_source")
    jira.restore(jira.key(4))
    sync(conn, keyring, source_id, "reconciliation")
    restored = probe.execute(
        "select deleted_at, deleted_by_run_id, deleted_reason from entities "
        "where source_id = %s and source_entity_id = %s",
        (source_id, jira.id(4)),
    ).fetchone()
    assert restored == (None, None, None)


def test_reconciliation_stores_source_vs_live_counts_per_project_and_flags_a_gap(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira_factory: JiraFactory
) -> None:
    jira = jira_factory(40)
    source_id = add_source(conn, keyring, jira)
    sync(conn, keyring, source_id, "full")
    _, clean = sync(conn, keyring, source_id, "reconciliation")
    rows = probe.execute(
        "select container, source_count, live_count from run_completeness where run_id = %s order by 1", (clean.id,)
    ).fetchall()
    assert [r[0] for r in rows] == ["ALPHA", "BETA", "CORE", "OPS"]
    assert all(r[1] == r[2] == 10 for r in rows)
    assert clean.error_detail is None

    # A new issue the source lists but the pipeline cannot load (malformed): counts differ for its project.
    created = jira.control.post("/_emulator/issues", json={"project": "BETA", "summary": "broken"}).json()
    jira.fault(malformed=True, keys=[created["key"]])
    _, gap = sync(conn, keyring, source_id, "reconciliation")

    beta = scalar(
        probe, "select (source_count, live_count)::text from run_completeness where run_id = %s and container = 'BETA'",
        (gap.id,),
    )
    assert beta == "(11,10)"
    assert gap.state == "succeeded" and gap.error_count == 1
    assert gap.error_detail is not None and "completeness: 1 of 4 units" in gap.error_detail
    assert "BETA source 11 / held 10" in gap.error_detail
