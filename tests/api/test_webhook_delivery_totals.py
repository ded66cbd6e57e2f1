"""The remembered-deliveries gauge still says what the dedupe window holds (decision 90).

GET /metrics reads harvester_webhook_deliveries_remembered from webhook_delivery_totals, which statement
triggers on webhook_deliveries keep, one slot per database session. Signed webhooks are sent to a real
`harvester serve` process from several threads at once (new deliveries, the same ones again, some after
they expired), the prune job's function runs as a worker would run it, and the scraped gauge is compared
with a count of the raw rows each time. Last, the totals are spoiled and `migrate` re-applies the trigger
file, which rebuilds them. A second test holds one session's delivery uncommitted and records another
delivery of the same source on a second session: it must not wait (the slots).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.db.migrate import migrate
from app.jobs.webhooks import prune_webhook_deliveries
from app.queries import webhooks as wq
from connectors.emulators.kit import RunningEmulator
from tests.api.conftest import JIRA_TOKEN, Server
from tests.conftest import as_worker

SECRET = "hook-secret-for-totals-0090"


def _body(n: int) -> bytes:
    """Delivery n: Harvester remembers a hash of the signed body, so each n is one delivery."""
    return json.dumps({"webhookEvent": "jira:issue_updated", "issue": {"id": str(10000 + n), "key": f"A-{n}"}}).encode()


def _send(server: Server, source_id: int, n: int) -> int:
    raw = _body(n)
    sig = "sha256=" + hmac.new(SECRET.encode(), raw, hashlib.sha256).hexdigest()
    headers = {"X-Hub-Signature": sig, "X-Atlassian-Webhook-Identifier": f"d-{n}", "content-type": "application/json"}
    return httpx.post(f"{server.base_url}/api/v1/webhooks/{source_id}", content=raw, headers=headers).status_code


def _assert_same(server: Server, sources: list[int]) -> None:
    with psycopg.connect(server.db_url) as conn:
        raw: dict[int, int] = dict(
            conn.execute("select source_id, count(*) from webhook_deliveries group by source_id").fetchall()
        )
    scraped: dict[int, float] = {}
    for family in text_string_to_metric_families(httpx.get(f"{server.base_url}/metrics").text):
        if family.name == "harvester_webhook_deliveries_remembered":
            scraped = {int(s.labels["source_id"]): s.value for s in family.samples}
    assert {s: scraped[s] for s in sources} == {s: raw.get(s, 0) for s in sources}


def test_remembered_deliveries_equal_the_window_and_survive_a_rebuild(
    fresh_api: Server, jira: RunningEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources: list[int] = []
    with fresh_api.client() as client:
        for i in range(2):
            made = client.post(
                "/api/v1/sources",
                json={
                    "name": f"hooked-{i}",
                    "connector_type": "jira",
                    "base_url": jira.base_url,
                    "credential": JIRA_TOKEN,
                    "webhook_enabled": True,
                    "webhook_secret": SECRET,
                },
            )
            assert made.status_code == 201, made.text
            sources.append(int(made.json()["id"]))
    _assert_same(fresh_api, sources)  # nothing remembered yet: 0 for both

    rng = random.Random(90)
    sends = [(rng.choice(sources), rng.randrange(80)) for _ in range(160)]  # about half are repeats
    with ThreadPoolExecutor(4) as pool:
        statuses = list(pool.map(lambda s: _send(fresh_api, *s), sends))
    assert set(statuses) <= {200, 202} and statuses.count(202) == len(set(sends))
    _assert_same(fresh_api, sources)

    # Some expire; a few of those are delivered again (taken again, still one row), then the prune job runs.
    keys = {"sha256:" + hashlib.sha256(_body(n)).hexdigest(): n for n in range(80)}
    with psycopg.connect(fresh_api.db_url, autocommit=True) as conn:
        expired = [
            (int(r[0]), keys[r[1]])
            for r in conn.execute(
                "update webhook_deliveries set expires_at = now() - interval '1 second'"
                " where delivery_id < 'sha256:5' returning source_id, delivery_id"
            ).fetchall()
        ]
    assert len(expired) > 5
    assert [_send(fresh_api, *e) for e in expired[:5]] == [202] * min(5, len(expired))
    _assert_same(fresh_api, sources)
    as_worker(monkeypatch, fresh_api.db_url, fresh_api.secret_key, tmp_path / "worker")
    assert prune_webhook_deliveries(0) == len(expired) - min(5, len(expired))
    _assert_same(fresh_api, sources)

    # Spoiled totals (as if deliveries had been written past the triggers) come back from the deliveries
    # when migrate re-applies the trigger file.
    with psycopg.connect(fresh_api.db_url, autocommit=True) as conn:
        conn.execute("update webhook_delivery_totals set deliveries = deliveries + 2")
        conn.execute("delete from webhook_delivery_totals where source_id = %s", (sources[0],))
    with pytest.raises(AssertionError):
        _assert_same(fresh_api, sources)
    with psycopg.connect(fresh_api.db_url, autocommit=True) as conn:
        conn.execute("delete from schema_trigger_files where name = '850_webhook_delivery_totals.sql'")
    migrate(fresh_api.db_url, tmp_path / "backups")
    _assert_same(fresh_api, sources)


def test_two_sessions_record_deliveries_of_one_source_without_waiting(fresh_db_url: str) -> None:
    """One counter row per source would make the second session wait for the first one's commit."""
    sessions: list[psycopg.Connection[Any]] = []
    try:
        while len(sessions) < 2:  # two sessions whose backends' slots differ
            conn = psycopg.connect(fresh_db_url)
            pid = conn.info.backend_pid
            if sessions and sessions[0].info.backend_pid % 16 == pid % 16:
                conn.close()
                continue
            sessions.append(conn)
        first, second = sessions
        assert wq.record_delivery(first, source_id=7, delivery_id="held") == "held"  # not committed
        second.execute("set lock_timeout = '2s'")
        assert wq.record_delivery(second, source_id=7, delivery_id="other") == "other"
        second.commit()
        first.commit()
        row = first.execute(
            "select sum(deliveries), count(*) from webhook_delivery_totals where source_id = 7"
        ).fetchone()
        assert row == (2, 2)  # two slots, one delivery each
        first.execute("delete from webhook_deliveries where source_id = 7")
        first.commit()
    finally:
        for conn in sessions:
            conn.close()
