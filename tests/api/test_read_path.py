"""The per-request shortcuts of issue 15 §2 keep their guarantees: an autocommit read connection is still
role harvester_api and goes back to the pool in transaction mode; a remembered decryption never answers
for another context, a tampered envelope or a keyring without the key."""

from __future__ import annotations

import os

import psycopg
import pytest

from app.api.db import Database, open_pool
from app.errors import HarvesterError
from app.secrets import Keyring
from tests.api.conftest import Server, SourceFactory


def test_a_read_connection_acts_as_the_api_role_and_returns_in_transaction_mode(fresh_db_url: str) -> None:
    pool = open_pool(fresh_db_url, min_size=1, max_size=1)  # one connection: read() and tx() share it
    db = Database(pool)
    try:
        with db.read() as conn:
            assert conn.autocommit
            assert conn.execute("select current_user").fetchone() == ("harvester_api",)
            with pytest.raises(psycopg.errors.InsufficientPrivilege) as refused:
                conn.execute("delete from entities")
            assert refused.value.sqlstate == "42501"
        with db.tx() as conn:
            assert not conn.autocommit
            assert conn.execute("select current_user").fetchone() == ("harvester_api",)
    finally:
        pool.close()


def test_a_remembered_decryption_answers_only_its_own_envelope_and_context() -> None:
    key = os.urandom(32)
    keyring = Keyring(key)
    envelope = keyring.encrypt("a-credential-0123456789", context="source:1")
    assert keyring.decrypt(envelope, context="source:1") == "a-credential-0123456789"
    assert keyring.decrypt(envelope, context="source:1") == "a-credential-0123456789"  # from memory

    with pytest.raises(HarvesterError, match="does not decrypt"):
        keyring.decrypt(envelope, context="source:2")  # copied to another source: still refused
    prefix, kid, blob = envelope.split(":", 2)
    tampered = f"{prefix}:{kid}:{blob[:-4]}{'AAAA' if blob[-4:] != 'AAAA' else 'BBBB'}"
    with pytest.raises(HarvesterError, match="does not decrypt"):
        keyring.decrypt(tampered, context="source:1")
    with pytest.raises(HarvesterError, match="not configured"):
        Keyring(os.urandom(32)).decrypt(envelope, context="source:1")  # another process's keyring: no key


def test_listing_runs_asks_for_the_source_only_when_it_must(api: Server, make_source: SourceFactory) -> None:
    """An unknown source is 404 (before any 422 for its filters, as ever); a known one with no matching
    runs is an empty page, not 404 (the existence check now runs only on an empty page or bad input)."""
    s = make_source()
    with api.client(scope="read") as c:
        unknown = c.get("/api/v1/sources/987654/runs")
        unknown_bad_cursor = c.get("/api/v1/sources/987654/runs", params={"cursor": "not-a-cursor"})
        known_bad_cursor = c.get(f"/api/v1/sources/{s['id']}/runs", params={"cursor": "not-a-cursor"})
        none_match = c.get(f"/api/v1/sources/{s['id']}/runs", params={"trigger": "watchdog"})
    assert unknown.status_code == 404 and unknown_bad_cursor.status_code == 404
    assert known_bad_cursor.status_code == 422 and known_bad_cursor.json()["field"] == "cursor"
    assert none_match.status_code == 200 and none_match.json()["items"] == []


def test_the_run_history_page_read_in_binary_equals_the_same_runs_read_as_text(fresh_db_url: str) -> None:
    """ListRunsPage fetches its rows in PostgreSQL's binary format (``-- results: binary``, issue 15 §2);
    ListRunsByIds reads the same view as text. Every kind of value a run holds must come out equal."""
    from app.db.connect import connect
    from app.queries import runs as rq
    from app.services.sources import NewSource, create_source

    with connect(fresh_db_url) as conn:
        source_id = create_source(
            conn,
            Keyring(os.urandom(32)),
            NewSource(name="binary", connector_type="jira", base_url="http://127.0.0.1:9", credential="t" * 20),
        )
        conn.execute(
            "insert into sync_runs (source_id, mode, trigger, state, scope, started_at, finished_at, heartbeat_at,"
            " entities_done, entities_total, error_count, error_detail, api_calls, rate_limited) values"
            " (%(s)s, 'full', 'manual', 'succeeded', null, '2026-11-30 10:00:00.123456+00',"
            "  '2026-11-30 10:01:02.5+00', null, 7, 9, 2, 'boom: «ünïcode» \"quoted\"\n', 5, 1),"
            " (%(s)s, 'incremental', 'schedule', 'failed',"
            '  \'{"kind": "window", "since": "2026-11-01T00:00:00+00:00"}\','
            "  '2026-11-30 11:00:00+00', '2026-12-02 11:00:00.000001+00', '2026-12-02 10:59:00+00', null, null, 0,"
            "  null, 0, 0)",
            {"s": source_id},
        )
        conn.execute(
            "insert into sync_runs (source_id, mode, trigger, state)"
            " values (%(s)s, 'reconciliation', 'manual', 'queued')",
            {"s": source_id},
        )
        conn.commit()
        page = rq.list_runs_page(
            conn,
            source_id=source_id,
            state=None,
            mode=None,
            run_type=None,
            trigger=None,
            started_from=None,
            started_to=None,
            before_id=None,
            lim=10,
        )
        as_text = rq.list_runs_by_ids(conn, ids=[r.id for r in page])

    assert len(page) == 3
    assert sorted(page, key=lambda r: r.id) == as_text
    assert {type(r.duration) for r in page} >= {type(None)} and page[-1].started_at is not None
    assert page[-1].started_at.tzinfo is not None and page[-1].started_at.microsecond == 123456
