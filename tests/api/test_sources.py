"""Sources, connectors and tokens through the served API: happy paths, masks, 4xx with the field named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import psycopg

from app.queries import runs as rq
from tests.api.conftest import Server, SourceFactory, job_count
from tests.conftest import REPO


def test_connectors_list_every_manifest(api: Server) -> None:
    with api.client("read") as c:
        body = c.get("/api/v1/connectors").json()["items"]
        one = c.get("/api/v1/connectors/jira")
        missing = c.get("/api/v1/connectors/gitlab")
    assert {m["connector_type"] for m in body} == {"jira", "confluence", "slack"}
    jira = one.json()
    assert jira["scope_kinds"] == ["project", "jql"]
    assert {f["key"]: f["default"] for f in jira["content_filters"]}["force_api_v2"] is False
    assert jira["webhook"]["signature_header"] == "X-Hub-Signature"
    assert jira["errors"]["permanent"]["404"] == "not_found"
    assert missing.status_code == 404 and missing.headers["content-type"] == "application/problem+json"


def test_create_list_get_shows_every_column_and_masks_secrets(api: Server, make_source: SourceFactory) -> None:
    created = make_source(webhook_secret="hook-secret-abcdef123456", webhook_enabled=True, sync_interval=600)
    assert created["credential"] == {"set": True, "mask": "••••0001"}
    assert created["webhook_secret"] == {"set": True, "mask": "••••3456"}
    for column in (
        "id",
        "name",
        "connector_type",
        "base_url",
        "auth_account",
        "auth_method",
        "state",
        "scope_mode",
        "scope_list",
        "content_filters",
        "sync_interval",
        "reconcile_interval",
        "reconcile_window",
        "authority_tier",
        "webhook_enabled",
        "incremental_cursor",
        "last_probe_at",
        "last_probe_status",
        "created_at",
        "updated_at",
    ):
        assert column in created
    assert created["health"] == "idle" and created["entity_count"] == 0 and created["dlq_depth"] == 0
    assert created["last_run"] is None and created["sync_interval"] == 600
    assert created["content_filters"]["comments"] is True  # manifest default filled in
    with api.client("read") as c:
        listed = c.get("/api/v1/sources").json()["items"]
        got = c.get(f"/api/v1/sources/{created['id']}").json()
    assert created["id"] in [s["id"] for s in listed]
    assert got == created
    assert "credential_enc" not in got and "webhook_secret_enc" not in got


def test_manifest_validation_names_the_field(api: Server, jira: object) -> None:
    base = {"name": "bad-one", "connector_type": "jira", "base_url": "http://127.0.0.1:9"}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"content_filters": {"colour": True}}, "content_filters.colour"),
        ({"scope_list": [{"kind": "board", "key": "X"}]}, "scope_list[0].kind"),
        ({"connector_type": "gitlab"}, "connector_type"),
        ({"surprise": 1}, "surprise"),
        ({"sync_interval": -5}, "sync_interval"),
        ({"reconcile_window": 10080}, "reconcile_window"),
        ({"reconcile_window": {"day": "funday", "time": "03:00"}}, "reconcile_window.day"),
        ({"reconcile_window": {"day": "sunday", "time": "3am"}}, "reconcile_window.time"),
        ({"state": "sleeping"}, "state"),
    ]
    with api.client() as c:
        for extra, field in cases:
            r = c.post("/api/v1/sources", json={**base, **extra})
            assert r.status_code == 422, (extra, r.text)
            problem = r.json()
            assert r.headers["content-type"] == "application/problem+json"
            assert problem["field"] == field, (extra, problem)
            assert problem["status"] == 422 and problem["type"].startswith("urn:harvester:problem:")
        bad_json = c.post("/api/v1/sources", content=b"{nope", headers={"content-type": "application/json"})
        names = [s["name"] for s in c.get("/api/v1/sources", params={"limit": 500}).json()["items"]]
    assert bad_json.status_code == 400 and bad_json.json()["status"] == 400
    assert "bad-one" not in names


def test_duplicate_name_is_409_on_name(api: Server, make_source: SourceFactory) -> None:
    first = make_source()
    second = make_source()
    with api.client() as c:
        r = c.post("/api/v1/sources", json={"name": first["name"], "connector_type": "jira"})
        renamed = c.patch(f"/api/v1/sources/{second['id']}", json={"name": first["name"]})
    for answer in (r, renamed):
        assert answer.status_code == 409, answer.text
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.json()["field"] == "name" and answer.json()["type"] == "urn:harvester:problem:name-taken"


def test_patch_changes_fields_and_null_clears_an_override(api: Server, make_source: SourceFactory) -> None:
    s = make_source(sync_interval=600, authority_tier="high")
    with api.client() as c:
        r = c.patch(
            f"/api/v1/sources/{s['id']}",
            json={
                "sync_interval": None,
                "scope_mode": "selected",
                "scope_list": ["ALPHA"],
                "state": "paused",
                "content_filters": {"comments": False},
            },
        )
        unknown = c.patch(f"/api/v1/sources/{s['id']}", json={"connector_type": "slack"})
        missing = c.patch("/api/v1/sources/999999", json={"state": "paused"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["sync_interval"] is None and body["authority_tier"] == "high"
    assert body["scope_list"] == ["ALPHA"] and body["state"] == "paused"
    assert body["content_filters"]["comments"] is False and body["content_filters"]["neighbours"] is True
    assert unknown.status_code == 422 and unknown.json()["field"] == "connector_type"
    assert missing.status_code == 404


def test_disconnect_clears_the_credential(api: Server, make_source: SourceFactory) -> None:
    s = make_source()
    with api.client() as c:
        refused = c.patch(f"/api/v1/sources/{s['id']}", json={"state": "disconnected", "credential": "x" * 20})
        r = c.patch(f"/api/v1/sources/{s['id']}", json={"state": "disconnected"})
    assert refused.status_code == 422 and refused.json()["field"] == "credential"
    assert r.json()["state"] == "disconnected" and r.json()["credential"] == {"set": False, "mask": None}
    with psycopg.connect(api.db_url) as conn:
        row = conn.execute("select credential_enc from sources where id = %s", (s["id"],)).fetchone()
    assert row == (None,)


def test_new_credential_replaces_the_old_one(api: Server, make_source: SourceFactory) -> None:
    s = make_source()
    with api.client() as c:
        r = c.patch(f"/api/v1/sources/{s['id']}", json={"credential": "brand-new-token-98765"})
    assert r.json()["credential"] == {"set": True, "mask": "••••8765"}


def test_delete_removes_and_refuses_while_a_run_is_active(api: Server, make_source: SourceFactory) -> None:
    s = make_source()
    with api.client() as c:
        run = c.post(f"/api/v1/sources/{s['id']}/runs", json={"mode": "full"}).json()
        busy = c.delete(f"/api/v1/sources/{s['id']}")
        c.post(f"/api/v1/runs/{run['id']}/cancel")
        gone = c.delete(f"/api/v1/sources/{s['id']}")
        after = c.get(f"/api/v1/sources/{s['id']}")
        again = c.delete(f"/api/v1/sources/{s['id']}")
    assert busy.status_code == 409 and busy.json()["active_run_id"] == run["id"]
    assert gone.status_code == 204 and after.status_code == 404 and again.status_code == 404


def test_connect_probes_and_starts_the_first_full_run_once(api: Server, make_source: SourceFactory) -> None:
    s = make_source()
    with api.client() as c:
        first = c.post(f"/api/v1/sources/{s['id']}/connect").json()
        with psycopg.connect(api.db_url) as conn:
            rq.cancel_run(conn, id=first["run"]["id"])
        second = c.post(f"/api/v1/sources/{s['id']}/connect").json()
        got = c.get(f"/api/v1/sources/{s['id']}").json()
    assert first["probe_status"] == "ok"
    assert first["run"]["mode"] == "full" and first["run"]["trigger"] == "connect"
    assert second == {"probe_status": "ok", "run": None}  # not a new source any more
    assert got["last_probe_status"] == "ok" and got["last_probe_at"] is not None
    assert job_count(api.db_url, "harvester:run_sync") >= 1


def test_connect_with_a_wrong_credential_reports_auth_failed(api: Server, make_source: SourceFactory) -> None:
    s = make_source(credential="wrong-token-0000000")
    with api.client() as c:
        r = c.post(f"/api/v1/sources/{s['id']}/connect").json()
    assert r == {"probe_status": "auth_failed", "run": None}


def test_token_scopes_are_enforced(api: Server, make_source: SourceFactory) -> None:
    s = make_source()
    anonymous = httpx.Client(base_url=api.base_url, timeout=30)
    forged = httpx.Client(base_url=api.base_url, timeout=30, headers={"Authorization": "Bearer hv_not-a-token"})
    with anonymous, forged, api.client("read") as reader:
        assert anonymous.get("/api/v1/sources").status_code == 401
        assert anonymous.get("/api/v1/sources").headers["www-authenticate"].startswith("Bearer")
        assert forged.get("/api/v1/sources").status_code == 401
        assert reader.get("/api/v1/sources").status_code == 200
        assert reader.get(f"/api/v1/sources/{s['id']}/runs").status_code == 200
        writes = [
            reader.post("/api/v1/sources", json={"name": "by-reader", "connector_type": "jira"}),
            reader.patch(f"/api/v1/sources/{s['id']}", json={"state": "paused"}),
            reader.delete(f"/api/v1/sources/{s['id']}"),
            reader.post(f"/api/v1/sources/{s['id']}/runs", json={}),
            reader.put("/api/v1/settings", json={"sync_interval": 60}),
            reader.post("/api/v1/sync-all"),
        ]
        assert [w.status_code for w in writes] == [403] * len(writes)
        assert all(w.json()["type"] == "urn:harvester:problem:forbidden" for w in writes)
        assert reader.get(f"/api/v1/sources/{s['id']}").json()["state"] == "active"
        assert anonymous.get("/health").status_code == 200


def test_token_create_cli_prints_a_working_token_once(api: Server, tmp_path: Path) -> None:
    env = api.cli_env(tmp_path / "data")
    out = subprocess.run(
        [sys.executable, "-m", "app.cli", "token", "create", "--name", "panel", "--scope", "read"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    token = out.splitlines()[0]
    audit = [json.loads(line) for line in (tmp_path / "data" / "audit.jsonl").read_text().splitlines()]
    assert [(a["action"], a["target"], a["result"]) for a in audit] == [("tokens.create", "token:panel", "ok")]
    with psycopg.connect(api.db_url) as conn:
        stored = conn.execute("select token_hash, scope from api_tokens where name = 'panel'").fetchall()
    assert len(stored) == 1 and stored[0][1] == "read" and token not in stored[0][0]
    with httpx.Client(base_url=api.base_url, headers={"Authorization": f"Bearer {token}"}) as c:
        assert c.get("/api/v1/sources").status_code == 200
        assert c.post("/api/v1/sync-all").status_code == 403
