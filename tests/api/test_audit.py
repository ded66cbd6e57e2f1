"""Admin audit events (seed 000, issue 10 §5): every mutating admin action through the API emits exactly
one event to the configured sink, with the right result, also when it fails; request ids travel with
problem documents; no secret appears in an event."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.api.conftest import Server, start_server

CREDENTIAL = "audit-credential-secret-0001"


@pytest.fixture()
def audited(fresh_db_url: str, tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    sink = tmp_path / "audit.jsonl"
    server = start_server(fresh_db_url, tmp_path, {"HARVESTER_AUDIT_SINK": f"file:{sink}"})
    try:
        yield server, sink
    finally:
        server.stop()


def events(sink: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in sink.read_text().splitlines()] if sink.exists() else []


def test_each_admin_action_emits_exactly_one_event(audited: tuple[Server, Path]) -> None:
    server, sink = audited
    api = server.client()
    done: list[tuple[str, str, int]] = []  # (action, expected result, status) in order

    def call(action: str, method: str, path: str, **kwargs: Any) -> Any:
        before = len(events(sink))
        response = api.request(method, path, **kwargs)
        after = events(sink)
        assert len(after) == before + 1, f"{action} {response.status_code}: {len(after) - before} events"
        event = after[-1]
        assert event["action"] == action
        assert event["result"] == ("ok" if response.status_code < 400 else "error")
        assert event["status"] == response.status_code
        assert event["request_id"] == response.headers["x-request-id"]
        assert event["actor"].startswith("token:test-admin-")
        done.append((action, event["result"], response.status_code))
        return response

    body = {"name": "audited", "connector_type": "jira", "base_url": "http://127.0.0.1:9", "credential": CREDENTIAL}
    created = call("sources.create", "POST", "/api/v1/sources", json=body).json()
    sid = created["id"]
    call("sources.create", "POST", "/api/v1/sources", json=body)  # 409/422: the name is taken
    call("sources.update", "PATCH", f"/api/v1/sources/{sid}", json={"sync_interval": 600})
    call("sources.update", "PATCH", "/api/v1/sources/999999", json={"sync_interval": 600})
    call("sources.connect", "POST", f"/api/v1/sources/{sid}/connect")
    run = call("runs.start", "POST", f"/api/v1/sources/{sid}/runs", json={"mode": "full"}).json()
    call("runs.start", "POST", f"/api/v1/sources/{sid}/runs", json={"mode": "full"})  # 409: one active run
    call("runs.cancel", "POST", f"/api/v1/runs/{run['id']}/cancel")
    call("runs.cancel", "POST", f"/api/v1/runs/{run['id']}/cancel")  # 409: already cancelled
    call("runs.sync_all", "POST", "/api/v1/sync-all")
    call("dead_letters.retry", "POST", f"/api/v1/sources/{sid}/dead-letters/retry")  # 409: empty DLQ
    call("settings.update", "PUT", "/api/v1/settings", json={"sync_interval": 1200})
    bad = call(
        "settings.update", "PUT", "/api/v1/settings", json={"alert_channels": [{"kind": "webhook", "url": "ftp://x"}]}
    )
    assert bad.status_code == 422 and bad.json()["field"] == "alert_channels[0].url"
    call("notes.update", "PUT", "/api/v1/entities/999999/notes", json={"owner_note": "x"})  # 404
    call("sources.delete", "DELETE", "/api/v1/sources/999999")
    call("sources.delete", "DELETE", f"/api/v1/sources/{sid}")

    # Reads emit nothing; a refused token is still one event for a mutating operation.
    before = len(events(sink))
    api.get("/api/v1/sources")
    api.get("/api/v1/settings")
    assert len(events(sink)) == before
    reader = server.client("read")
    denied = reader.put("/api/v1/settings", json={"sync_interval": 900})
    assert denied.status_code == 403
    last = events(sink)[-1]
    assert len(events(sink)) == before + 1 and last["result"] == "error" and last["status"] == 403

    all_events = events(sink)
    per_request = Counter(e["request_id"] for e in all_events)
    assert max(per_request.values()) == 1  # never two events for one request
    assert CREDENTIAL not in sink.read_text()
    assert {a for a, _, _ in done} == {
        "sources.create",
        "sources.update",
        "sources.connect",
        "sources.delete",
        "runs.start",
        "runs.cancel",
        "runs.sync_all",
        "dead_letters.retry",
        "settings.update",
        "notes.update",
    }
    assert {r for _, r, _ in done} == {"ok", "error"}
    print("\naudit events per admin action (API):", dict(Counter(f"{a}:{r}" for a, r, _ in done)))


def test_problem_carries_the_request_id_and_the_log_names_it(audited: tuple[Server, Path]) -> None:
    server, _ = audited
    api = server.client()
    mine = api.get("/api/v1/sources/999999", headers={"X-Request-Id": "trace-abc.123"})
    assert mine.status_code == 404
    assert mine.headers["x-request-id"] == "trace-abc.123"
    assert mine.json()["request_id"] == "trace-abc.123"
    insane = api.get("/api/v1/sources/999999", headers={"X-Request-Id": "bad id\twith spaces"})
    assert insane.headers["x-request-id"] != "bad id\twith spaces"
    assert insane.json()["request_id"] == insane.headers["x-request-id"]


def test_unwritable_sink_does_not_fail_the_action(fresh_db_url: str, tmp_path: Path) -> None:
    sink = tmp_path / "no-such-dir" / "audit.jsonl"
    server = start_server(fresh_db_url, tmp_path, {"HARVESTER_AUDIT_SINK": f"file:{sink}"})
    try:
        api = server.client()
        for interval in (600, 700, 800):
            assert api.put("/api/v1/settings", json={"sync_interval": interval}).status_code == 200
        metrics = api.get("/metrics").text
        assert "harvester_audit_sink_failures_total 3.0" in metrics
        assert server.logs().count("audit sink") == 1  # logged once per outage, counted every time
    finally:
        server.stop()


def test_a_503_names_its_cause_in_the_log_under_the_request_id(audited: tuple[Server, Path]) -> None:
    import psycopg

    server, sink = audited
    api = server.client()
    body = {
        "name": "undecryptable",
        "connector_type": "jira",
        "base_url": "http://127.0.0.1:9",
        "credential": CREDENTIAL,
    }
    sid = api.post("/api/v1/sources", json=body).json()["id"]
    with psycopg.connect(server.db_url) as conn:  # as if encrypted under a key this server does not have
        conn.execute("update sources set credential_enc = 'v1:00000000:AAAA' where id = %s", (sid,))
    refused = api.post(f"/api/v1/sources/{sid}/connect", headers={"X-Request-Id": "req-503-check"})
    assert refused.status_code == 503
    assert refused.json()["request_id"] == "req-503-check" and refused.headers["x-request-id"] == "req-503-check"
    line = next(json.loads(x) for x in server.logs().splitlines() if "req-503-check" in x and x.startswith("{"))
    assert "encrypted with key 00000000, which is not configured" in line["message"]
    assert line["level"] == "WARNING" and line["request_id"] == "req-503-check"
    assert events(sink)[-1]["result"] == "error" and events(sink)[-1]["status"] == 503
    assert CREDENTIAL not in server.logs()
