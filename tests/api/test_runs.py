"""Runs, sync-all and dead letters through the served API (the pipeline runs in-process, as the worker would)."""

from __future__ import annotations

from datetime import datetime

from app.db.connect import connect
from app.pipeline.run import execute_run
from app.secrets import Keyring
from tests.api.conftest import Server, SourceFactory, job_count


def _execute(api: Server, run_id: int) -> None:
    """What the worker's run_sync job does with the job the API deferred."""
    with connect(api.db_url, autocommit=True) as conn:
        execute_run(conn, run_id, worker_id="test-worker", keyring=Keyring(bytes.fromhex(api.secret_key)))


def test_second_run_is_409_naming_the_active_run(api: Server, make_source: SourceFactory) -> None:
    s = make_source()
    with api.client() as c:
        first = c.post(f"/api/v1/sources/{s['id']}/runs", json={"mode": "full"})
        second = c.post(f"/api/v1/sources/{s['id']}/runs", json={"mode": "incremental"})
    assert first.status_code == 202 and first.json()["state"] == "queued"
    assert second.status_code == 409
    assert second.json()["active_run_id"] == first.json()["id"]
    assert second.json()["type"] == "urn:harvester:problem:run-active"
    with connect(api.db_url, autocommit=True) as conn:
        args = conn.execute("select args from procrastinate_jobs where task_name = 'harvester:run_sync'").fetchall()
    assert {"run_id": first.json()["id"]} in [a for (a,) in args]


def test_run_validation_and_missing_things(api: Server, make_source: SourceFactory) -> None:
    s = make_source()
    paused = make_source(state="paused")
    with api.client() as c:
        bad_mode = c.post(f"/api/v1/sources/{s['id']}/runs", json={"mode": "turbo"})
        bad_scope = c.post(f"/api/v1/sources/{s['id']}/runs", json={"scope": {"kind": "window", "since": "yesterday"}})
        bad_type = c.post(
            f"/api/v1/sources/{s['id']}/runs",
            json={"scope": {"kind": "items", "items": [{"source_type": "page", "source_entity_id": "1"}]}},
        )
        on_paused = c.post(f"/api/v1/sources/{paused['id']}/runs", json={})
        no_source = c.post("/api/v1/sources/987654/runs", json={})
        no_run = c.get("/api/v1/runs/987654")
    assert bad_mode.status_code == 422 and bad_mode.json()["field"] == "mode"
    assert bad_scope.status_code == 422 and bad_scope.json()["field"] == "scope.since"
    assert bad_type.status_code == 422 and bad_type.json()["field"] == "scope.items[0].source_type"
    assert on_paused.status_code == 409
    assert no_source.status_code == 404 and no_run.status_code == 404


def test_history_progress_and_cancel(api: Server, make_source: SourceFactory) -> None:
    s = make_source()
    with api.client() as c:
        full = c.post(f"/api/v1/sources/{s['id']}/runs", json={"mode": "full"}).json()
        _execute(api, full["id"])
        done = c.get(f"/api/v1/runs/{full['id']}").json()
        queued = c.post(f"/api/v1/sources/{s['id']}/runs", json={"mode": "incremental"}).json()
        cancelled = c.post(f"/api/v1/runs/{queued['id']}/cancel")
        twice = c.post(f"/api/v1/runs/{queued['id']}/cancel")
        fresh = c.post(f"/api/v1/sources/{s['id']}/runs", json={"mode": "reconciliation"})
        c.post(f"/api/v1/runs/{fresh.json()['id']}/cancel")
        page1 = c.get(f"/api/v1/sources/{s['id']}/runs", params={"limit": 2}).json()
        page2 = c.get(f"/api/v1/sources/{s['id']}/runs", params={"limit": 2, "cursor": page1["next_cursor"]}).json()
        source = c.get(f"/api/v1/sources/{s['id']}").json()
    assert done["state"] == "succeeded" and done["run_type"] == "full"
    assert done["progress"]["done"] == 20 and done["progress"]["total"] == 20
    assert done["progress"]["percent"] == 100.0 and done["progress"]["eta_seconds"] == 0.0
    assert done["progress"]["rate_per_second"] > 0
    # duration is the view's interval (finished_at - started_at), rendered as seconds everywhere.
    ran = datetime.fromisoformat(done["finished_at"]) - datetime.fromisoformat(done["started_at"])
    assert done["duration_seconds"] == round(ran.total_seconds(), 3)
    assert page2["items"][0]["duration_seconds"] == done["duration_seconds"]
    assert page1["items"][1]["duration_seconds"] is None  # cancelled before it started
    assert done["api_calls"] > 0
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
    assert twice.status_code == 409
    assert fresh.status_code == 202  # the next run starts fresh after a cancel
    assert [r["id"] for r in page1["items"]] == [fresh.json()["id"], queued["id"]]
    assert [r["id"] for r in page2["items"]] == [full["id"]] and page2["next_cursor"] is None
    assert source["entity_count"] == 20 and source["last_run"]["state"] == "cancelled"


def test_sync_all_starts_one_run_per_active_source_and_reports_skips(api: Server, make_source: SourceFactory) -> None:
    busy = make_source()
    idle = make_source()
    make_source(state="paused")
    with api.client() as c:
        active = c.post(f"/api/v1/sources/{busy['id']}/runs", json={}).json()
        r = c.post("/api/v1/sync-all", json={"mode": "incremental"})
        body = r.json()
        started_for = {run["source_id"] for run in body["runs"]}
        group = c.get("/api/v1/runs", params={"ids": ",".join(map(str, body["run_ids"]))}).json()
        for run_id in body["run_ids"]:
            c.post(f"/api/v1/runs/{run_id}/cancel")
        cancelled = c.get(body["status_url"]).json()
        bad = c.get("/api/v1/runs", params={"ids": "1,two"})
    assert r.status_code == 202 and r.headers["location"] == body["status_url"]
    assert idle["id"] in started_for and busy["id"] not in started_for
    assert {"source_id": busy["id"], "active_run_id": active["id"]} in body["skipped"]
    assert all(run["trigger"] == "manual" and run["mode"] == "incremental" for run in body["runs"])
    assert group["status"] == "queued" and group["counts"]["queued"] == len(body["run_ids"])
    assert cancelled["status"] == "cancelled"
    assert bad.status_code == 422 and bad.json()["field"] == "ids"


def test_group_status_never_hides_failures(api: Server, make_source: SourceFactory) -> None:
    ok, bad, third = make_source(), make_source(credential="wrong-token"), make_source()
    with api.client() as c:
        r_ok = c.post(f"/api/v1/sources/{ok['id']}/runs", json={"mode": "full"}).json()
        r_bad = c.post(f"/api/v1/sources/{bad['id']}/runs", json={"mode": "full"}).json()
        r_third = c.post(f"/api/v1/sources/{third['id']}/runs", json={"mode": "full"}).json()
        ids = f"{r_ok['id']},{r_bad['id']},{r_third['id']}"
        queued = c.get("/api/v1/runs", params={"ids": ids}).json()
        _execute(api, r_ok["id"])
        _execute(api, r_bad["id"])
        running = c.get("/api/v1/runs", params={"ids": ids}).json()
        c.post(f"/api/v1/runs/{r_third['id']}/cancel")
        mixed = c.get("/api/v1/runs", params={"ids": ids}).json()
        all_ok = c.get("/api/v1/runs", params={"ids": str(r_ok["id"])}).json()
        all_bad = c.get("/api/v1/runs", params={"ids": f"{r_bad['id']},{r_third['id']},987654"}).json()
        only_cancelled = c.get("/api/v1/runs", params={"ids": str(r_third["id"])}).json()
        none = c.get("/api/v1/runs", params={"ids": "987654,987655"})
    assert queued["status"] == "queued" and queued["counts"]["queued"] == 3
    assert running["status"] == "running"  # one is still queued: not finished, yet the failure already counts
    assert running["counts"] == {"queued": 1, "running": 0, "succeeded": 1, "failed": 1, "cancelled": 0}
    assert mixed["status"] == "partially_failed"
    assert mixed["counts"] == {"queued": 0, "running": 0, "succeeded": 1, "failed": 1, "cancelled": 1}
    assert all_ok["status"] == "succeeded" and all_ok["succeeded_with_errors"] == 0 and all_ok["missing"] == []
    assert all_bad["status"] == "failed" and all_bad["missing"] == [987654]
    assert only_cancelled["status"] == "cancelled"
    assert none.status_code == 404 and none.json()["type"] == "urn:harvester:problem:not-found"


def test_dead_letters_review_summary_and_retry(api: Server, make_source: SourceFactory) -> None:
    s = make_source()
    with connect(api.db_url, autocommit=True) as conn:
        for i, reason in enumerate(["permission", "permission", "not_found"]):
            conn.execute(
                "insert into dead_letters (source_id, source_type, source_entity_id, reason, error_detail) "
                "values (%s, 'ticket', %s, %s, 'HTTP 403')",
                (s["id"], str(10000 + i), reason),
            )
    with api.client() as c:
        page = c.get(f"/api/v1/sources/{s['id']}/dead-letters", params={"limit": 2}).json()
        rest = c.get(
            f"/api/v1/sources/{s['id']}/dead-letters", params={"limit": 2, "cursor": page["next_cursor"]}
        ).json()
        only = c.get(f"/api/v1/sources/{s['id']}/dead-letters", params={"reason": "not_found"}).json()
        bad_reason = c.get(f"/api/v1/sources/{s['id']}/dead-letters", params={"reason": "sad"})
        summary = c.get(f"/api/v1/sources/{s['id']}/dead-letters/summary").json()
        retry = c.post(f"/api/v1/sources/{s['id']}/dead-letters/retry")
        _execute(api, retry.json()["id"])
        after = c.get(f"/api/v1/sources/{s['id']}/dead-letters/summary").json()
        empty = c.post(f"/api/v1/sources/{s['id']}/dead-letters/retry")
        missing = c.get("/api/v1/sources/987654/dead-letters")
    assert len(page["items"]) == 2 and len(rest["items"]) == 1 and rest["next_cursor"] is None
    assert [d["reason"] for d in only["items"]] == ["not_found"]
    assert bad_reason.status_code == 422 and bad_reason.json()["field"] == "reason"
    assert summary == {"source_id": s["id"], "total": 3, "by_reason": {"not_found": 1, "permission": 2}}
    assert retry.status_code == 202 and retry.headers["location"] == f"/api/v1/runs/{retry.json()['id']}"
    run = retry.json()
    assert run["run_type"] == "dlq_retry" and run["trigger"] == "manual"
    assert [i["source_entity_id"] for i in run["scope"]["items"]] == ["10000", "10001", "10002"]
    assert after["total"] == 0  # the items loaded this time and left the queue
    assert empty.status_code == 409 and missing.status_code == 404
    assert job_count(api.db_url, "harvester:run_sync") >= 1
