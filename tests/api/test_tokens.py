"""Token management through the served API and the CLI (issue 14 item 5): unique names, expiry, last use,
revoke by id or name, one audit event per mutating action, no token value after creation; and CORS
preflights answered without a token for the configured origins."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.conftest import Server, start_server
from tests.conftest import REPO

PANEL = "http://panel.example:3000"


@pytest.fixture()
def audited(fresh_db_url: str, tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    sink = tmp_path / "audit.jsonl"
    server = start_server(
        fresh_db_url, tmp_path, {"HARVESTER_AUDIT_SINK": f"file:{sink}", "HARVESTER_CORS_ORIGINS": PANEL}
    )
    try:
        yield server, sink
    finally:
        server.stop()


def _events(sink: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in sink.read_text().splitlines()] if sink.exists() else []


def _bearer(server: Server, token: str) -> httpx.Client:
    return httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def test_tokens_through_the_api_unique_expiring_revocable_and_audited(audited: tuple[Server, Path]) -> None:
    server, sink = audited
    admin = server.client()
    before = len(_events(sink))

    created = admin.post("/api/v1/tokens", json={"name": "panel", "scope": "read"})
    duplicate = admin.post("/api/v1/tokens", json={"name": "panel", "scope": "admin"})
    blank = admin.post("/api/v1/tokens", json={"name": "   ", "scope": "admin"})
    nameless = admin.post("/api/v1/tokens", json={"scope": "admin"})
    past = admin.post("/api/v1/tokens", json={"name": "old", "scope": "read", "expires_at": "2020-01-01T00:00:00Z"})
    soon = (datetime.now(UTC) + timedelta(seconds=3)).isoformat()
    expiring = admin.post("/api/v1/tokens", json={"name": "short", "scope": "read", "expires_at": soon})

    assert created.status_code == 201, created.text
    body = created.json()
    token = body.pop("token")
    assert token.startswith("hv_") and body["state"] == "active" and body["expires_at"] is None
    assert body["last_used_at"] is None and body["name"] == "panel" and body["scope"] == "read"
    assert duplicate.status_code == 409 and duplicate.json()["field"] == "name"
    assert blank.status_code == 422 and blank.json()["field"] == "name"
    assert nameless.status_code == 422 and nameless.json()["field"] == "name"
    assert past.status_code == 422 and past.json()["field"] == "expires_at"
    assert expiring.status_code == 201 and expiring.json()["expires_at"] is not None

    with _bearer(server, token) as reader:
        assert reader.get("/api/v1/sources").status_code == 200
        assert reader.get("/api/v1/tokens").status_code == 403  # the list names every automation: admin only
        assert reader.post("/api/v1/tokens", json={"name": "x", "scope": "admin"}).status_code == 403
    with _bearer(server, expiring.json()["token"]) as short:
        assert short.get("/api/v1/sources").status_code == 200
        time.sleep(max(0.0, (datetime.fromisoformat(soon) - datetime.now(UTC)).total_seconds()) + 0.5)
        late = short.get("/api/v1/sources")
    assert late.status_code == 401 and late.json()["type"] == "urn:harvester:problem:unauthorized"

    listed = admin.get("/api/v1/tokens").json()["items"]
    by_name = {t["name"]: t for t in listed}
    assert by_name["panel"]["last_used_at"] is not None
    assert by_name["short"]["state"] == "expired"
    assert all("token" not in t and "token_hash" not in t for t in listed)
    assert token not in admin.get("/api/v1/tokens").text

    revoked = admin.delete(f"/api/v1/tokens/{body['id']}")
    again = admin.delete(f"/api/v1/tokens/{body['id']}")
    unknown = admin.delete("/api/v1/tokens/987654")
    assert revoked.status_code == 200 and revoked.json()["state"] == "revoked"
    assert again.status_code == 409 and unknown.status_code == 404
    with _bearer(server, token) as reader:
        assert reader.get("/api/v1/sources").status_code == 401
    reused = admin.post("/api/v1/tokens", json={"name": "panel", "scope": "read"})
    assert reused.status_code == 201  # a revoked token's name is free again

    events = _events(sink)[before:]
    assert [(e["action"], e["status"]) for e in events] == [
        ("tokens.create", 201),
        ("tokens.create", 409),
        ("tokens.create", 422),
        ("tokens.create", 422),
        ("tokens.create", 422),
        ("tokens.create", 201),
        ("tokens.create", 403),
        ("tokens.revoke", 200),
        ("tokens.revoke", 409),
        ("tokens.revoke", 404),
        ("tokens.create", 201),
    ]
    assert events[0]["target"] == f"token:{body['id']}" and events[7]["target"] == f"token:{body['id']}"
    assert token not in sink.read_text() and token not in server.logs()


def test_cors_preflight_needs_no_token_and_only_configured_origins_pass(audited: tuple[Server, Path]) -> None:
    server, _ = audited
    preflight = {
        "Origin": PANEL,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    with httpx.Client(base_url=server.base_url, timeout=30) as anonymous:
        ok = anonymous.options("/api/v1/sources", headers=preflight)
        stranger = anonymous.options("/api/v1/sources", headers={**preflight, "Origin": "http://evil.example"})
    assert ok.status_code == 204, ok.text
    assert ok.headers["access-control-allow-origin"] == PANEL
    assert "POST" in ok.headers["access-control-allow-methods"]
    assert "authorization" in ok.headers["access-control-allow-headers"].lower()
    assert stranger.status_code == 400 and "access-control-allow-origin" not in stranger.headers
    with server.client() as admin:
        real = admin.get("/api/v1/sources", headers={"Origin": PANEL})
        foreign = admin.get("/api/v1/sources", headers={"Origin": "http://evil.example"})
    assert real.status_code == 200 and real.headers["access-control-allow-origin"] == PANEL
    assert "x-request-id" in real.headers["access-control-expose-headers"].lower()
    assert "access-control-allow-origin" not in foreign.headers


def test_without_configured_origins_no_cross_origin_header_is_sent(api: Server) -> None:
    with api.client() as admin:
        r = admin.get("/api/v1/sources", headers={"Origin": PANEL})
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers


def test_token_cli_expiry_unique_names_and_revoke_by_id_or_name(api: Server, tmp_path: Path) -> None:
    sink = tmp_path / "cli-audit.jsonl"
    env = {
        "HARVESTER_DATABASE_URL": api.db_url,
        "HARVESTER_SECRET_KEY": api.secret_key,
        "HARVESTER_DATA_DIR": str(tmp_path / "data"),
        "HARVESTER_AUDIT_SINK": f"file:{sink}",
        "PATH": "/usr/bin:/bin",
    }

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "app.cli", "token", *args],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    name = f"ci-{uuid.uuid4().hex[:6]}"
    made = cli("create", "--name", name, "--scope", "read", "--expires-in", "30d")
    assert made.returncode == 0, made.stderr
    token = made.stdout.splitlines()[0]
    token_id = int(made.stdout.splitlines()[1].split()[2])
    dup = cli("create", "--name", name)
    blank = cli("create", "--name", "  ")
    bad_life = cli("create", "--name", f"{name}-x", "--expires-in", "soon")
    for refused in (dup, blank, bad_life):
        assert refused.returncode == 2 and "Traceback" not in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
    assert "already named" in dup.stderr and "name:" in blank.stderr and "--expires-in" in bad_life.stderr

    listed = cli("list").stdout
    line = next(ln for ln in listed.splitlines() if name in ln)
    assert "active" in line and "expires never" not in line and token not in listed
    with _bearer(api, token) as reader:
        assert reader.get("/api/v1/sources").status_code == 200

    by_id = cli("revoke", str(token_id))
    assert by_id.returncode == 0 and f"revoked token {token_id}" in by_id.stdout
    with _bearer(api, token) as reader:
        assert reader.get("/api/v1/sources").status_code == 401
    second = cli("create", "--name", name)
    assert second.returncode == 0
    by_name = cli("revoke", "--name", name)
    gone = cli("revoke", name)
    assert by_name.returncode == 0 and gone.returncode == 2 and "no active token" in gone.stderr

    events = _events(sink)
    assert [(e["action"], e["result"]) for e in events] == [
        ("tokens.create", "ok"),
        ("tokens.create", "error"),
        ("tokens.create", "error"),
        ("tokens.create", "error"),
        ("tokens.revoke", "ok"),
        ("tokens.create", "ok"),
        ("tokens.revoke", "ok"),
        ("tokens.revoke", "error"),
    ]
    assert events[4]["target"] == f"token:{token_id}" and events[6]["target"] == f"token:{name}"
    assert token not in sink.read_text()


def test_token_cli_binds_a_search_token_to_its_principals(api: Server, tmp_path: Path) -> None:
    env = api.cli_env(tmp_path / "data")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "app.cli", "token", *args],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    name = f"portal-{uuid.uuid4().hex[:6]}"
    made = cli(
        "create",
        "--name",
        name,
        "--scope",
        "search",
        "--principal",
        "user:anna@example.com",
        "--principal",
        "group:jira:alpha-team",
    )
    unbound = cli("create", "--name", f"{name}-x", "--scope", "search")
    odd = cli("create", "--name", f"{name}-y", "--scope", "search", "--principal", "anna")
    assert made.returncode == 0, made.stderr
    for refused in (unbound, odd):
        assert refused.returncode == 2 and "Traceback" not in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1 and "principals" in refused.stderr
    line = next(ln for ln in cli("list").stdout.splitlines() if name in ln)
    assert "search" in line and "as group:jira:alpha-team,user:anna@example.com" in line
    with _bearer(api, made.stdout.splitlines()[0]) as portal:
        assert portal.get("/api/v1/sources").status_code == 403  # a search token only searches
    listed = {t["name"]: t for t in api.client().get("/api/v1/tokens", params={"limit": 500}).json()["items"]}
    assert listed[name]["principals"] == ["group:jira:alpha-team", "user:anna@example.com"]
