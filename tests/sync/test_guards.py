"""Deletion guards (seed 001, issue 3 "Guards"): zero items, incomplete enumeration, mass deletion."""

from __future__ import annotations

from typing import Any

import psycopg

from app.secrets import Keyring
from tests.sync.conftest import Jira, add_source, live_ids, scalar, sync


def _deleted(probe: psycopg.Connection[Any], source_id: int) -> int:
    return int(
        scalar(probe, "select count(*) from entities where source_id = %s and deleted_at is not null", (source_id,))
    )


def test_reconciliation_that_sees_zero_items_deletes_nothing(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    sync(conn, keyring, source_id, "full")
    jira.fault(status=403, keys=jira.keys())  # Jira hides what the credential may not browse

    outcome, run = sync(conn, keyring, source_id, "reconciliation")

    assert (outcome.state, run.state, outcome.deleted) == ("succeeded", "succeeded", 0)
    assert run.error_detail is not None and "no items" in run.error_detail
    assert _deleted(probe, source_id) == 0 and len(live_ids(probe, source_id)) == 30


# Ten pages of 100: more than the pipeline fetches ahead of its first commit (DEFAULT_PREFETCH pages
# queued and one being built), so a fault injected after that commit is met before the end.
PAGED_ISSUES = 1000


def _break_after_first_page(jira: Jira) -> Any:
    def hook(progress: Any) -> None:
        jira.fault(status=500, ratio=1.0, retry_after=0)

    return hook


def test_reconciliation_that_breaks_mid_enumeration_fails_and_deletes_nothing(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira_factory: Any
) -> None:
    jira: Jira = jira_factory(PAGED_ISSUES)
    source_id = add_source(conn, keyring, jira)
    sync(conn, keyring, source_id, "full")
    jira.delete(jira.key(7))

    outcome, run = sync(conn, keyring, source_id, "reconciliation", on_progress=_break_after_first_page(jira))

    assert (outcome.state, run.state) == ("failed", "failed")
    # Whole pages only: the ones fetched before the fault, committed in order before the failure.
    done = run.entities_done or 0
    assert 100 <= done < PAGED_ISSUES and done % 100 == 0 and run.error_detail
    assert _deleted(probe, source_id) == 0 and len(live_ids(probe, source_id)) == PAGED_ISSUES


def test_failed_reconciliation_leaves_no_seen_set_behind(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira_factory: Any
) -> None:
    jira: Jira = jira_factory(PAGED_ISSUES)
    source_id = add_source(conn, keyring, jira)
    sync(conn, keyring, source_id, "full")

    _, run = sync(conn, keyring, source_id, "reconciliation", on_progress=_break_after_first_page(jira))

    assert run.state == "failed"
    assert scalar(probe, "select count(*) from run_seen_items where run_id = %s", (run.id,)) == 0


def test_reconciliation_that_would_delete_too_much_deletes_nothing(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    sync(conn, keyring, source_id, "full")
    for i in range(7):  # 7 of 30 = 23 % > the default 20 %
        jira.delete(jira.key(i))

    outcome, run = sync(conn, keyring, source_id, "reconciliation")

    assert (outcome.state, outcome.deleted) == ("succeeded", 0)
    assert run.error_detail is not None and "mass-deletion guard" in run.error_detail
    assert "7 of 30" in run.error_detail
    assert _deleted(probe, source_id) == 0


def test_confirmed_reconciliation_performs_the_mass_deletion(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    sync(conn, keyring, source_id, "full")
    gone = [jira.id(i) for i in range(7)]
    for i in range(7):
        jira.delete(jira.key(i))
    sync(conn, keyring, source_id, "reconciliation")

    outcome, run = sync(conn, keyring, source_id, "reconciliation", options={"confirm_mass_delete": True})

    assert (outcome.state, outcome.deleted, run.error_detail) == ("succeeded", 7, None)
    assert set(live_ids(probe, source_id)) == {jira.id(i) for i in range(30)} - set(gone)
