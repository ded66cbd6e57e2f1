"""Secrets never leave the server; the API's database role cannot write entity tables."""

from __future__ import annotations

import hashlib
import hmac
import json

import httpx
import psycopg
import pytest

from app.api.db import open_pool
from app.queries import entities as eq
from connectors.emulators.kit import RunningEmulator
from tests.api.conftest import Server

CANARY_CREDENTIAL = "CANARY-credential-7f3a9c1e5b2d4068"
CANARY_WEBHOOK = "CANARY-webhook-0b8e6d4c2a9f1735"


def test_canary_secrets_appear_in_no_response_and_no_log_line(fresh_api: Server, jira: RunningEmulator) -> None:
    api = fresh_api
    with api.client() as c:
        created = c.post(
            "/api/v1/sources",
            json={
                "name": "canary",
                "connector_type": "jira",
                "base_url": jira.base_url,
                "credential": CANARY_CREDENTIAL,
                "webhook_secret": CANARY_WEBHOOK,
                "webhook_enabled": True,
            },
        ).json()
        sid = created["id"]
        c.get("/api/v1/sources")
        c.get(f"/api/v1/sources/{sid}")
        c.post(f"/api/v1/sources/{sid}/connect")  # the emulator refuses the canary: auth_failed
        c.post(f"/api/v1/sources/{sid}/runs", json={"mode": "full"})
        c.get(f"/api/v1/sources/{sid}/runs")
        c.post("/api/v1/sources", json={"name": "canary", "connector_type": "jira", "credential": CANARY_CREDENTIAL})
        c.post(
            "/api/v1/sources", json={"name": "x", "connector_type": "jira", "credential": CANARY_CREDENTIAL, "oops": 1}
        )
        c.patch(f"/api/v1/sources/{sid}", json={"state": "disconnected", "credential": CANARY_CREDENTIAL})
        c.patch(f"/api/v1/sources/{sid}", json={"credential": CANARY_CREDENTIAL, "sync_interval": -1})
        c.patch(f"/api/v1/sources/{sid}", json={"webhook_secret": CANARY_WEBHOOK})
        c.post("/api/v1/sources", json={"name": "nul\u0000", "connector_type": "jira", "credential": CANARY_CREDENTIAL})
        c.get("/api/v1/settings")
        c.get("/metrics")
        c.get("/api/v1/workers")
    raw = json.dumps({"webhookEvent": "jira:issue_updated", "issue": {"id": "10001"}}).encode()
    good = "sha256=" + hmac.new(CANARY_WEBHOOK.encode(), raw, hashlib.sha256).hexdigest()
    for sig in (good, "sha256=" + "1" * 64):
        r = httpx.post(
            f"{api.base_url}/api/v1/webhooks/{sid}",
            content=raw,
            headers={"X-Hub-Signature": sig, "X-Atlassian-Webhook-Identifier": f"canary-{sig[-4:]}"},
        )
        api.bodies.append(r.content)
    with psycopg.connect(api.db_url) as conn:
        row = conn.execute("select credential_enc, webhook_secret_enc from sources where id = %s", (sid,)).fetchone()
    assert row is not None and row[0] and row[1]
    api.stop()  # flush every log line
    haystacks = [b.decode(errors="replace") for b in api.bodies] + [api.logs()]
    assert len(api.bodies) >= 17
    needles = [CANARY_CREDENTIAL, CANARY_WEBHOOK, CANARY_CREDENTIAL[:12], CANARY_WEBHOOK[:12], row[0], row[1]]
    needles += [row[0].split(":")[-1][:24], row[1].split(":")[-1][:24]]  # any sizeable piece of the ciphertext
    for text in haystacks:
        for needle in needles:
            assert needle not in text
    assert "Traceback" not in api.logs() and "unhandled" not in api.logs()
    assert "select " not in "".join(haystacks[:-1]).lower()


def test_notes_are_written_but_entities_are_not(api: Server, jira: RunningEmulator) -> None:
    with api.client() as c:
        sid = c.post(
            "/api/v1/sources", json={"name": "notes-src", "connector_type": "jira", "base_url": jira.base_url}
        ).json()["id"]
    with psycopg.connect(api.db_url) as conn:  # the pipeline's part, as superuser here
        entity_id = conn.execute(
            "insert into entities (source_id, source_type, source_entity_id, status, title, content_hash) "
            "values (%s, 'ticket', '10001', 'final', 'original', 'h') returning id",
            (sid,),
        ).fetchone()[0]  # type: ignore[index]
    with api.client() as c:
        empty = c.get(f"/api/v1/entities/{entity_id}/notes").json()
        put = c.put(f"/api/v1/entities/{entity_id}/notes", json={"owner_note": "ask Anna", "fact_status": "done"})
        again = c.get(f"/api/v1/entities/{entity_id}/notes").json()
        unknown = c.put(f"/api/v1/entities/{entity_id}/notes", json={"title": "rename the entity"})
        missing = c.put("/api/v1/entities/987654321/notes", json={"owner_note": "x"})
    with api.client("read") as reader:
        forbidden = reader.put(f"/api/v1/entities/{entity_id}/notes", json={"owner_note": "x"})
    assert empty["owner_note"] is None and empty["updated_at"] is None
    assert put.status_code == 200 and again["owner_note"] == "ask Anna" and again["updated_by"].startswith("test-admin")
    assert unknown.status_code == 422 and unknown.json()["field"] == "title"
    assert missing.status_code == 404 and forbidden.status_code == 403
    with psycopg.connect(api.db_url) as conn:
        title = conn.execute("select title from entities where id = %s", (entity_id,)).fetchone()
    assert title == ("original",)

    # The same pool the API's lifespan opens: a deliberate write to entities is refused by PostgreSQL.
    pool = open_pool(api.db_url, min_size=1, max_size=1)
    try:
        with pool.connection() as conn:
            assert conn.execute("select current_user").fetchone() == ("harvester_api",)
            with pytest.raises(psycopg.errors.InsufficientPrivilege) as refused:
                eq.soft_delete_items(
                    conn, source_id=sid, run_id=0, rows=[{"source_type": "ticket", "source_entity_id": "10001"}]
                )
            assert refused.value.sqlstate == "42501"
    finally:
        pool.close()
