"""Dead-letter queue fill and DLQ-retry runs (seed 000 §3, seed 001 "Сбойные items -> dlq_retry")."""

from __future__ import annotations

from typing import Any

import psycopg

from app.queries import dead_letters as dlq
from app.secrets import Keyring
from tests.sync.conftest import Jira, add_source, live_ids, sync


def _queue(probe: psycopg.Connection[Any], source_id: int) -> dict[str, tuple[str, int]]:
    rows = probe.execute(
        "select source_entity_id, reason, attempts from dead_letters where source_id = %s", (source_id,)
    ).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def _items(ids: list[str]) -> dict[str, Any]:
    return {"kind": "items", "items": [{"source_type": "ticket", "source_entity_id": i} for i in ids]}


def test_malformed_issues_go_to_the_queue_and_the_full_run_succeeds(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    jira.fault(malformed=True, keys=[jira.key(2), jira.key(9)])

    outcome, run = sync(conn, keyring, source_id, "full")

    assert (outcome.state, run.error_count) == ("succeeded", 2)
    assert _queue(probe, source_id) == {jira.id(2): ("malformed", 1), jira.id(9): ("malformed", 1)}
    assert len(live_ids(probe, source_id)) == 28


def test_forbidden_and_malformed_items_get_their_reasons(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    jira.fault(status=403, keys=[jira.key(1), jira.key(5)])
    jira.fault(malformed=True, keys=[jira.key(8)])
    ids = [jira.id(i) for i in (1, 5, 8, 12)]

    outcome, run = sync(conn, keyring, source_id, "incremental", trigger="webhook", scope=_items(ids))

    assert (outcome.state, run.error_count) == ("succeeded", 3)
    assert _queue(probe, source_id) == {
        jira.id(1): ("permission", 1),
        jira.id(5): ("permission", 1),
        jira.id(8): ("malformed", 1),
    }
    assert live_ids(probe, source_id) == [jira.id(12)]


def test_dlq_retry_resolves_loaded_and_gone_items_and_counts_the_still_failing(
    conn: psycopg.Connection[Any], probe: psycopg.Connection[Any], keyring: Keyring, jira: Jira
) -> None:
    source_id = add_source(conn, keyring, jira)
    fixed, still_forbidden, deleted, malformed = 1, 5, 9, 8
    jira.fault(status=403, keys=[jira.key(i) for i in (fixed, still_forbidden, deleted)])
    jira.fault(malformed=True, keys=[jira.key(malformed)])
    failing = [jira.id(i) for i in (fixed, still_forbidden, deleted, malformed)]
    sync(conn, keyring, source_id, "incremental", trigger="webhook", scope=_items(failing))
    assert len(_queue(probe, source_id)) == 4
    jira.clear_faults()
    jira.fault(status=403, keys=[jira.key(still_forbidden)])
    jira.delete(jira.key(deleted))
    identities = [r.source_entity_id for r in dlq.list_dead_letter_identities(conn, source_id=source_id)]
    conn.commit()

    outcome, run = sync(conn, keyring, source_id, "incremental", trigger="manual", scope=_items(identities))

    assert (outcome.state, run.run_type, run.error_count) == ("succeeded", "dlq_retry", 1)
    assert _queue(probe, source_id) == {jira.id(still_forbidden): ("permission", 2)}
    assert set(live_ids(probe, source_id)) == {jira.id(fixed), jira.id(malformed)}
