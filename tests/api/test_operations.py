"""Workers, health and metrics."""

from __future__ import annotations

from pathlib import Path

import httpx
import psycopg

from tests.api.conftest import Server, SourceFactory, start_server
from tests.test_heap import STARTED_UP, frozen_objects


def test_workers_online_by_heartbeat_and_redelivered_runs(api: Server, make_source: SourceFactory) -> None:
    s = make_source()
    with api.client() as c:
        run = c.post(f"/api/v1/sources/{s['id']}/runs", json={}).json()
    with psycopg.connect(api.db_url) as conn:
        conn.execute("delete from procrastinate_workers")
        conn.execute(
            "insert into procrastinate_workers (last_heartbeat) values (now() - interval '6 minutes'), (now())"
        )
        conn.execute(
            "update sync_runs set state = 'running', deliveries = 2, claimed_at = now(), worker_id = 'w:1', "
            "started_at = now(), heartbeat_at = now() where id = %s",
            (run["id"],),
        )
    with api.client("read") as c:
        body = c.get("/api/v1/workers").json()
        health = c.get("/health")
    assert body["online"] == 1 and [w["online"] for w in body["workers"]] == [False, True]
    assert body["redelivered_runs"] == [
        {
            **{k: body["redelivered_runs"][0][k] for k in ("claimed_at",)},
            "id": run["id"],
            "source_id": s["id"],
            "deliveries": 2,
            "worker_id": "w:1",
            "run_type": "incremental",  # derived by sync_run_history (seed 003 lists each run's type)
        }
    ]
    assert health.status_code == 200
    assert health.json()["status"] == "ok" and health.json()["migrations"]["current"] is True


def test_metrics_text_exposition(api: Server, make_source: SourceFactory) -> None:
    s = make_source()
    with psycopg.connect(api.db_url) as conn:
        conn.execute(
            "insert into dead_letters (source_id, source_type, source_entity_id, reason) "
            "values (%s, 'ticket', '1', 'malformed')",
            (s["id"],),
        )
    r = httpx.get(f"{api.base_url}/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = r.text
    for family in (
        "harvester_runs",
        "harvester_items_processed_total",
        "harvester_dead_letters",
        "harvester_seconds_since_last_success",
        "harvester_rate_limited_calls_total",
        "harvester_webhook_deliveries_remembered",
        "harvester_webhook_requests_total",
        "harvester_workers_online",
    ):
        # prometheus_client names a counter family without its "_total" sample suffix.
        assert f"# TYPE {family} " in text or f"# TYPE {family.removesuffix('_total')} counter" in text
    assert f'harvester_dead_letters{{reason="malformed",source_id="{s["id"]}"}} 1.0' in text
    # Issue 10 §4: per-source last success (0 = never succeeded) and DLQ depth by name and connector.
    assert f'harvester_source_last_success_timestamp_seconds{{connector="jira",source="{s["name"]}"}} 0.0' in text
    assert f'harvester_dlq_depth{{connector="jira",source="{s["name"]}"}} 1.0' in text
    assert "# TYPE harvester_run_duration_seconds histogram" in text


def test_metrics_can_require_a_token(fresh_db_url: str, tmp_path: Path) -> None:
    server = start_server(fresh_db_url, tmp_path, {"HARVESTER_METRICS_PUBLIC": "0"})
    try:
        assert httpx.get(f"{server.base_url}/metrics").status_code == 401
        with server.client("read") as c:
            assert c.get("/metrics").status_code == 200
        assert httpx.get(f"{server.base_url}/health").status_code == 200
    finally:
        server.stop()


def test_the_server_froze_its_start_up_objects(api: Server) -> None:
    """Decision 92: ``harvester serve`` settles its heap once the app is built, before it serves."""
    assert frozen_objects(api.logs()) >= STARTED_UP, api.logs()[-2000:]


def test_unknown_routes_and_methods_are_problems(api: Server) -> None:
    with api.client() as c:
        nowhere = c.get("/api/v1/nowhere")
        wrong = c.delete("/api/v1/settings")
    assert nowhere.status_code == 404 and nowhere.headers["content-type"] == "application/problem+json"
    assert wrong.status_code == 405 and wrong.json()["status"] == 405
