"""Webhooks: HMAC verified, deduplicated by delivery id, queued as a job; the job starts an items run."""

from __future__ import annotations

import hashlib
import hmac
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.db.connect import connect
from app.jobs.webhooks import SourceBusy, apply_webhook
from app.pipeline.run import execute_run
from app.secrets import Keyring
from connectors.emulators.kit import RunningEmulator
from tests.api.conftest import Server, SourceFactory, job_count
from tests.conftest import as_worker

SECRET = "hook-secret-for-tests-0042"


def _signed(body: dict[str, Any], delivery: str, secret: str = SECRET) -> tuple[bytes, dict[str, str]]:
    raw = json.dumps(body).encode()
    sig = "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    return raw, {"X-Hub-Signature": sig, "X-Atlassian-Webhook-Identifier": delivery, "content-type": "application/json"}


def _issue_event(issue_id: str, event: str = "jira:issue_updated") -> dict[str, Any]:
    return {"webhookEvent": event, "issue": {"id": issue_id, "key": "ALPHA-1", "fields": {}}}


def _stored(api: Server, source_id: int) -> tuple[int, int]:
    with connect(api.db_url, autocommit=True) as conn:
        row = conn.execute("select count(*) from webhook_deliveries where source_id = %s", (source_id,)).fetchone()
    assert row is not None and isinstance(row[0], int)
    return int(row[0]), job_count(api.db_url, "harvester:apply_webhook", source_id)


@pytest.fixture()
def hooked(make_source: SourceFactory) -> dict[str, Any]:
    return make_source(webhook_enabled=True, webhook_secret=SECRET)


def test_emulator_signed_delivery_is_accepted_and_queued(
    api: Server, hooked: dict[str, Any], jira: RunningEmulator
) -> None:
    sent = httpx.post(
        f"{jira.base_url}/_emulator/webhooks/send",
        json={"url": f"{api.base_url}/api/v1/webhooks/{hooked['id']}", "secret": SECRET, "key": "ALPHA-2"},
    ).json()
    assert sent["status"] == 202
    assert _stored(api, hooked["id"]) == (1, 1)


def test_bad_signature_unknown_or_paused_source_store_nothing(
    api: Server, hooked: dict[str, Any], make_source: SourceFactory
) -> None:
    paused = make_source(webhook_enabled=True, webhook_secret=SECRET, state="paused")
    off = make_source()
    body, headers = _signed(_issue_event("10001"), "d-bad")
    forged = {**headers, "X-Hub-Signature": "sha256=" + "0" * 64}
    with httpx.Client(base_url=api.base_url) as c:
        bad = c.post(f"/api/v1/webhooks/{hooked['id']}", content=body, headers=forged)
        unsigned = c.post(
            f"/api/v1/webhooks/{hooked['id']}", content=body, headers={"content-type": "application/json"}
        )
        other_secret = c.post(
            f"/api/v1/webhooks/{hooked['id']}", content=body, headers=_signed(_issue_event("10001"), "d", "nope")[1]
        )
        unknown = c.post("/api/v1/webhooks/987654", content=body, headers=headers)
        on_paused = c.post(f"/api/v1/webhooks/{paused['id']}", content=body, headers=headers)
        disabled = c.post(f"/api/v1/webhooks/{off['id']}", content=body, headers=headers)
    assert [bad.status_code, unsigned.status_code, other_secret.status_code] == [401, 401, 401]
    assert unknown.status_code == 404 and on_paused.status_code == 409 and disabled.status_code == 403
    assert bad.headers["content-type"] == "application/problem+json"
    for source_id in (hooked["id"], paused["id"], off["id"]):
        assert _stored(api, source_id) == (0, 0)


def test_malformed_but_signed_body_is_422_and_stores_nothing(api: Server, hooked: dict[str, Any]) -> None:
    body, headers = _signed({"webhookEvent": "jira:issue_updated", "issue": {}}, "d-malformed")
    with httpx.Client(base_url=api.base_url) as c:
        r = c.post(f"/api/v1/webhooks/{hooked['id']}", content=body, headers=headers)
    assert r.status_code == 422 and _stored(api, hooked["id"]) == (0, 0)


def test_one_delivery_replayed_100_times_is_processed_once(api: Server, hooked: dict[str, Any]) -> None:
    body, headers = _signed(_issue_event("10003"), "delivery-replayed")
    url = f"{api.base_url}/api/v1/webhooks/{hooked['id']}"

    def send(_: int) -> int:
        return httpx.post(url, content=body, headers=headers, timeout=30).status_code

    with ThreadPoolExecutor(max_workers=10) as pool:
        statuses = list(pool.map(send, range(100)))
    assert sorted(set(statuses)) == [200, 202] and statuses.count(202) == 1
    assert _stored(api, hooked["id"]) == (1, 1)


def test_event_without_work_is_acknowledged_without_a_job(api: Server, hooked: dict[str, Any]) -> None:
    body, headers = _signed({"webhookEvent": "project_created", "project": {"id": 1}}, "d-project")
    r = httpx.post(f"{api.base_url}/api/v1/webhooks/{hooked['id']}", content=body, headers=headers)
    assert r.status_code == 202 and r.json()["status"] == "ignored"
    assert _stored(api, hooked["id"]) == (1, 0)


@pytest.fixture()
def worker_env(api: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The job functions as the worker runs them: same database and key (they defer on their own connection)."""
    as_worker(monkeypatch, api.db_url, api.secret_key, tmp_path / "data")


def test_apply_webhook_starts_an_items_run_and_deletes_soft_delete(
    api: Server, hooked: dict[str, Any], jira: RunningEmulator, worker_env: None
) -> None:
    keyring = Keyring(bytes.fromhex(api.secret_key))
    with api.client() as c:
        full = c.post(f"/api/v1/sources/{hooked['id']}/runs", json={"mode": "full"}).json()
    with connect(api.db_url, autocommit=True) as conn:
        execute_run(conn, full["id"], worker_id="test-worker", keyring=keyring)
    httpx.delete(f"{jira.base_url}/_emulator/issues/ALPHA-3").raise_for_status()  # id 10008
    try:
        with api.client() as c:
            blocker = c.post(f"/api/v1/sources/{hooked['id']}/runs", json={}).json()
        with pytest.raises(SourceBusy):  # retried later by Procrastinate: no change is lost
            apply_webhook(source_id=hooked["id"], upserts=[["ticket", "10004"]], deletes=[["ticket", "10008"]])
        with api.client() as c:
            c.post(f"/api/v1/runs/{blocker['id']}/cancel")
        run_id = apply_webhook(source_id=hooked["id"], upserts=[["ticket", "10004"]], deletes=[["ticket", "10008"]])
        assert run_id is not None
        with connect(api.db_url, autocommit=True) as conn:
            execute_run(conn, run_id, worker_id="test-worker", keyring=keyring)
            deleted = conn.execute(
                "select deleted_at is not null from entities where source_id = %s and source_entity_id = '10008'",
                (hooked["id"],),
            ).fetchone()
        with api.client() as c:
            run = c.get(f"/api/v1/runs/{run_id}").json()
    finally:
        httpx.post(f"{jira.base_url}/_emulator/issues/ALPHA-3/restore")
    assert run["trigger"] == "webhook" and run["mode"] == "incremental" and run["state"] == "succeeded"
    assert run["scope"] == {
        "kind": "items",
        "items": [
            {"source_type": "ticket", "source_entity_id": "10004"},
            {"source_type": "ticket", "source_entity_id": "10008"},
        ],
    }
    assert deleted == (True,)
    assert job_count(api.db_url, "harvester:run_sync") >= 1


def test_a_webhook_url_with_the_admins_own_query_parameters_is_accepted(api: Server, hooked: dict[str, Any]) -> None:
    # Jira admins may append substitution variables (`?issue=${issue.key}`) to a webhook URL: the source,
    # not this API, builds that query, so it must not turn a signed delivery into a 422 (every other
    # operation refuses unknown parameters).
    body, headers = _signed(_issue_event("10077"), "delivery-with-query")
    with api.client() as c:
        answered = c.post(
            f"/api/v1/webhooks/{hooked['id']}",
            params={"issue": "ALPHA-7", "user": "anna"},
            content=body,
            headers=headers,
        )
        elsewhere = c.get(f"/api/v1/sources/{hooked['id']}", params={"issue": "ALPHA-7"})
    assert answered.status_code == 202, answered.text
    assert _stored(api, hooked["id"]) == (1, 1)
    assert elsewhere.status_code == 422 and elsewhere.json()["field"] == "issue"
