"""One list convention through the served API (issue 14 §2): ``limit``, an opaque ``cursor``, the envelope
``{items, next_cursor}``, documented filters, unknown query parameters refused, ``GET /runs`` across
sources, ``Location`` on 201/202, and a source's reconcile window and effective schedule."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from tests.api.conftest import Server, SourceFactory


def _walk(c: httpx.Client, path: str, **params: Any) -> tuple[list[dict[str, Any]], int]:
    """Every item of a list, following ``next_cursor``; and how many pages that took."""
    items: list[dict[str, Any]] = []
    pages = 0
    cursor = None
    while True:
        r = c.get(path, params={**params, **({"cursor": cursor} if cursor else {})})
        assert r.status_code == 200, r.text
        body = r.json()
        assert set(body) == {"items", "next_cursor"}
        items += body["items"]
        pages += 1
        cursor = body["next_cursor"]
        if cursor is None:
            return items, pages
        assert pages < 100


def _problem(r: httpx.Response, status: int, field: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = r.json()
    assert body["field"] == field, body
    return body


def test_every_list_pages_by_cursor_without_gaps_or_repeats(api: Server, make_source: SourceFactory) -> None:
    made = [make_source(name=f"page-{i}") for i in range(5)]
    with api.client() as c:
        for i in range(3):
            c.post("/api/v1/tokens", json={"name": f"page-token-{i}", "scope": "read"})
        sources, pages = _walk(c, "/api/v1/sources", limit=2)
        tokens, _ = _walk(c, "/api/v1/tokens", limit=2)
        connectors, connector_pages = _walk(c, "/api/v1/connectors", limit=1)
        first = c.get("/api/v1/sources", params={"limit": 2}).json()
    ids = [s["id"] for s in sources]
    assert ids == sorted(set(ids)) and {s["id"] for s in made} <= set(ids)
    assert pages >= 3  # five sources at two a page
    assert len(first["items"]) == 2 and first["next_cursor"]
    token_ids = [t["id"] for t in tokens]
    assert token_ids == sorted(set(token_ids)) and {"page-token-0", "page-token-2"} <= {t["name"] for t in tokens}
    assert [m["connector_type"] for m in connectors] == ["confluence", "jira", "slack"] and connector_pages == 3


def test_cursor_limit_and_unknown_parameters_are_422_naming_them(api: Server, make_source: SourceFactory) -> None:
    s = make_source()
    with api.client() as c:
        cursor = c.get("/api/v1/sources", params={"limit": 1}).json()["next_cursor"]
        runs_cursor = c.get("/api/v1/runs", params={"limit": 1}).json()["next_cursor"]
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        kind, last_id, check = raw.split(":")
        forged = base64.urlsafe_b64encode(f"{kind}:{int(last_id) + 1}:{check}".encode()).decode().rstrip("=")
        answers = {
            "tampered": c.get("/api/v1/sources", params={"cursor": forged}),
            "garbage": c.get("/api/v1/sources", params={"cursor": "not-a-cursor!"}),
            "truncated": c.get("/api/v1/sources", params={"cursor": cursor[:-3]}),
            "dead-letters": c.get(f"/api/v1/sources/{s['id']}/dead-letters", params={"cursor": cursor}),
        }
        foreign = c.get("/api/v1/sources", params={"cursor": runs_cursor}) if runs_cursor else None
        zero = c.get("/api/v1/sources", params={"limit": 0})
        huge = c.get("/api/v1/runs", params={"limit": 501})
        unknown = {
            "/api/v1/sources": c.get("/api/v1/sources", params={"colour": "red"}),
            "/api/v1/sources/{id}/runs": c.get(f"/api/v1/sources/{s['id']}/runs", params={"before_id": "5"}),
            "/api/v1/sources/{id}/dead-letters": c.get(
                f"/api/v1/sources/{s['id']}/dead-letters", params={"after_id": "5"}
            ),
            "/api/v1/settings": c.get("/api/v1/settings", params={"verbose": "1"}),
            "/api/v1/sources/{id}": c.get(f"/api/v1/sources/{s['id']}", params={"expand": "runs"}),
            "/api/v1/sync-all": c.post("/api/v1/sync-all", params={"dry_run": "1"}),
            "/health": c.get("/health", params={"deep": "1"}),
        }
    for name, r in answers.items():
        assert _problem(r, 422, "cursor")["detail"], name
    if foreign is not None:
        _problem(foreign, 422, "cursor")
    _problem(zero, 422, "limit")
    _problem(huge, 422, "limit")
    expected_field = {
        "/api/v1/sources": "colour",
        "/api/v1/sources/{id}/runs": "before_id",
        "/api/v1/sources/{id}/dead-letters": "after_id",
        "/api/v1/settings": "verbose",
        "/api/v1/sources/{id}": "expand",
        "/api/v1/sync-all": "dry_run",
        "/health": "deep",
    }
    for path, r in unknown.items():
        problem = _problem(r, 422, expected_field[path])
        assert problem["type"] == "urn:harvester:problem:unknown-parameter", path


def test_runs_across_sources_with_filters(api: Server, make_source: SourceFactory) -> None:
    a, b = make_source(), make_source()
    with api.client() as c:
        full_a = c.post(f"/api/v1/sources/{a['id']}/runs", json={"mode": "full"})
        c.post(f"/api/v1/runs/{full_a.json()['id']}/cancel")
        inc_b = c.post(f"/api/v1/sources/{b['id']}/runs", json={"mode": "incremental"})
        plain = c.get("/api/v1/runs")
        of_b = c.get("/api/v1/runs", params={"source_id": b["id"]}).json()
        cancelled_a = c.get("/api/v1/runs", params={"source_id": a["id"], "state": "cancelled"}).json()
        full_only = c.get("/api/v1/runs", params={"source_id": a["id"], "mode": "full", "run_type": "full"}).json()
        manual = c.get("/api/v1/runs", params={"source_id": b["id"], "trigger": "manual"}).json()
        webhook = c.get("/api/v1/runs", params={"source_id": b["id"], "trigger": "webhook"}).json()
        since = (datetime.now(UTC) - timedelta(minutes=10)).isoformat()
        until = (datetime.now(UTC) + timedelta(minutes=10)).isoformat()
        window = c.get("/api/v1/runs", params={"source_id": a["id"], "started_from": since, "started_to": until})
        future = c.get("/api/v1/runs", params={"source_id": a["id"], "started_from": until}).json()
        per_source = c.get(f"/api/v1/sources/{a['id']}/runs", params={"state": "cancelled"}).json()
        bad_time = c.get("/api/v1/runs", params={"started_from": "yesterday"})
        naive = c.get("/api/v1/runs", params={"started_to": "2026-11-30T10:00:00"})
        backwards = c.get("/api/v1/runs", params={"started_from": until, "started_to": since})
        bad_state = c.get("/api/v1/runs", params={"state": "sleeping"})
        mixed = c.get("/api/v1/runs", params={"ids": str(inc_b.json()["id"]), "state": "queued"})
        group = c.get("/api/v1/runs", params={"ids": str(inc_b.json()["id"])}).json()
    assert full_a.status_code == 202 and full_a.headers["location"] == f"/api/v1/runs/{full_a.json()['id']}"
    assert inc_b.headers["location"] == f"/api/v1/runs/{inc_b.json()['id']}"
    assert plain.status_code == 200 and set(plain.json()) == {"items", "next_cursor"}
    listed = [r["id"] for r in plain.json()["items"]]
    assert listed == sorted(listed, reverse=True) and {full_a.json()["id"], inc_b.json()["id"]} <= set(listed)
    assert [r["id"] for r in of_b["items"]] == [inc_b.json()["id"]]
    assert [r["id"] for r in cancelled_a["items"]] == [full_a.json()["id"]]
    assert [r["id"] for r in full_only["items"]] == [full_a.json()["id"]]
    assert [r["id"] for r in manual["items"]] == [inc_b.json()["id"]] and webhook["items"] == []
    assert window.status_code == 200 and [r["id"] for r in window.json()["items"]] == [full_a.json()["id"]]
    assert future["items"] == []
    assert [r["id"] for r in per_source["items"]] == [full_a.json()["id"]]
    _problem(bad_time, 422, "started_from")
    _problem(naive, 422, "started_to")
    _problem(backwards, 422, "started_to")
    _problem(bad_state, 422, "state")
    _problem(mixed, 422, "state")
    assert group["status"] == "queued" and group["counts"]["queued"] == 1


def test_token_location_names_a_readable_token(api: Server) -> None:
    with api.client() as c:
        created = c.post("/api/v1/tokens", json={"name": "located", "scope": "read"})
        got = c.get(created.headers["location"])
        listed = c.get("/api/v1/tokens", params={"scope": "read", "state": "active"}).json()["items"]
        revoked = c.get("/api/v1/tokens", params={"state": "revoked"}).json()["items"]
    assert created.status_code == 201 and created.headers["location"] == f"/api/v1/tokens/{created.json()['id']}"
    assert got.status_code == 200 and got.json()["name"] == "located" and "token" not in got.json()
    assert "located" in {t["name"] for t in listed} and all(t["scope"] == "read" for t in listed)
    assert all(t["state"] == "revoked" for t in revoked)


def test_reconcile_window_and_effective_schedule(api: Server, make_source: SourceFactory) -> None:
    inherits = make_source()
    own = make_source(sync_interval=600, reconcile_window={"day": "saturday", "time": "22:30"})
    with api.client() as c:
        settings = c.get("/api/v1/settings").json()["values"]
        cleared = c.patch(f"/api/v1/sources/{own['id']}", json={"reconcile_window": None}).json()
        moved = c.patch(f"/api/v1/sources/{own['id']}", json={"reconcile_window": {"day": "monday", "time": "01:05"}})
        paused = c.patch(f"/api/v1/sources/{inherits['id']}", json={"state": "paused"}).json()
    assert own["reconcile_window"] == {"day": "saturday", "time": "22:30"}  # the settings' shape, in and out
    plan = own["schedule"]
    assert plan["sync_interval"] == {"value": 600, "inherited": False}
    assert plan["reconcile_window"] == {"value": {"day": "saturday", "time": "22:30"}, "inherited": False}
    assert plan["reconcile_interval"] == {"value": settings["reconcile_interval"], "inherited": True}
    assert plan["timezone"] == settings["timezone"]
    # Never synced: the tick starts the first full sync one polling interval after creation.
    assert plan["next_poll_mode"] == "full"
    created = datetime.fromisoformat(own["created_at"])
    assert datetime.fromisoformat(plan["next_poll_at"]) == created + timedelta(seconds=600)
    assert plan["next_reconciliation_at"] is None  # anchored by the first full sync, which has not run
    base = inherits["schedule"]
    assert base["sync_interval"] == {"value": settings["sync_interval"], "inherited": True}
    assert base["reconcile_window"] == {"value": settings["reconcile_window"], "inherited": True}
    assert inherits["reconcile_window"] is None and inherits["sync_interval"] is None
    assert cleared["reconcile_window"] is None and cleared["schedule"]["reconcile_window"]["inherited"] is True
    assert moved.status_code == 200 and moved.json()["reconcile_window"] == {"day": "monday", "time": "01:05"}
    assert paused["schedule"]["next_poll_at"] is None and paused["schedule"]["next_reconciliation_at"] is None
