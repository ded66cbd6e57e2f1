"""Source fields the manifest governs (issue 12, items 2 and 5): unsupported auth methods are refused,
a NULL authority tier shows as the manifest default."""

from __future__ import annotations

from app.db.connect import connect
from app.pipeline.run import execute_run
from app.secrets import Keyring
from tests.api.conftest import Server, SourceFactory


def test_an_auth_method_the_manifest_does_not_support_is_refused_on_create_and_patch(
    api: Server, make_source: SourceFactory
) -> None:
    base = {"name": "jira-oauth", "connector_type": "jira", "base_url": "http://127.0.0.1:9", "auth_method": "oauth"}
    existing = make_source()
    with api.client() as c:
        created = c.post("/api/v1/sources", json=base)
        patched = c.patch(f"/api/v1/sources/{existing['id']}", json={"auth_method": "oauth"})
        names = [s["name"] for s in c.get("/api/v1/sources", params={"limit": 500}).json()["items"]]
        stored = c.get(f"/api/v1/sources/{existing['id']}").json()

    assert created.status_code == 422 and created.json()["field"] == "auth_method"
    assert patched.status_code == 422 and patched.json()["field"] == "auth_method"
    assert "jira-oauth" not in names and stored["auth_method"] == "static_token"


def test_a_null_authority_tier_shows_as_the_manifest_default(api: Server, make_source: SourceFactory) -> None:
    inherited = make_source()
    explicit = make_source(authority_tier="high")

    assert (inherited["authority_tier"], inherited["authority_tier_inherited"]) == ("normal", True)
    assert (explicit["authority_tier"], explicit["authority_tier_inherited"]) == ("high", False)


def test_get_run_carries_the_completeness_audit_of_a_reconciliation(api: Server, make_source: SourceFactory) -> None:
    source = make_source()
    with api.client() as c:
        full = c.post(f"/api/v1/sources/{source['id']}/runs", json={"mode": "full"}).json()
        _execute(api, full["id"])
        rec = c.post(f"/api/v1/sources/{source['id']}/runs", json={"mode": "reconciliation"}).json()
        _execute(api, rec["id"])
        got = c.get(f"/api/v1/runs/{rec['id']}").json()
        plain = c.get(f"/api/v1/runs/{full['id']}").json()

    assert got["state"] == "succeeded" and got["completeness"]
    assert all(u["source_count"] == u["live_count"] and u["difference"] == 0 for u in got["completeness"])
    assert plain["completeness"] is None


def _execute(api: Server, run_id: int) -> None:
    with connect(api.db_url, autocommit=True) as conn:
        execute_run(conn, run_id, worker_id="test-worker", keyring=Keyring(bytes.fromhex(api.secret_key)))
