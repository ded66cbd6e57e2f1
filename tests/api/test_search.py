"""POST /api/v1/search through a real server: results respect the principal's rights (issue 5 item 3); they
are entities with one score, and a search token searches only as its bound principals (issue 14 §4)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from app.db.connect import connect
from app.embedding import get_embedder
from app.pipeline.run import execute_run
from app.secrets import Keyring
from app.services.sources import NewSource, create_source, start_run
from app.vector.stage import VectorStage
from connectors.emulators.jira import JiraEmulator
from connectors.emulators.kit import serve
from tests.api.conftest import Server, start_server

TOKEN = "search-jira-token"


@pytest.fixture(scope="module")
def searchable(server_url: str, template_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A database holding one Jira source synced with real embeddings, and a server over it."""
    from tests.conftest import TEMPLATE, _create, _drop, with_dbname

    name = f"hv_search_{os.getpid()}"
    _create(server_url, name, template=TEMPLATE)
    url = with_dbname(server_url, name)
    emulator = serve(JiraEmulator(24, seed=3, token=TOKEN), "127.0.0.1", 0)
    tmp: Path = tmp_path_factory.mktemp("search")
    server: Server | None = None
    try:
        keyring = Keyring(os.urandom(32))
        with connect(url, autocommit=True) as conn:
            source_id = create_source(
                conn,
                keyring,
                NewSource(name="jira", connector_type="jira", base_url=emulator.base_url, credential=TOKEN),
            )
            run_id = start_run(conn, source_id, mode="full", trigger="manual")
            stage = VectorStage(get_embedder({"embedder": "local"}))
            assert execute_run(conn, run_id, worker_id="t", keyring=keyring, chunks=stage).state == "succeeded"
        server = start_server(url, tmp, {"HARVESTER_EMBEDDER": "local"})
        yield server
    finally:
        if server is not None:
            server.stop()
        emulator.stop()
        _drop(server_url, name)


def _search(
    server: Server, principal: Mapping[str, object], scope: str = "admin", **extra: object
) -> list[dict[str, Any]]:
    with server.client(scope) as c:
        r = c.post(
            "/api/v1/search",
            json={"query": "login fails after the session expires", "principal": principal, "k": 50, **extra},
        )
    assert r.status_code == 200, r.text
    results: list[dict[str, Any]] = r.json()["results"]
    return results


def _acl(server: Server, entity_id: object) -> list[str]:
    with psycopg.connect(server.db_url) as conn:
        row = conn.execute("select acl_principals from entities where id = %s", (entity_id,)).fetchone()
    assert row is not None
    return list(row[0] or [])


def test_a_principal_sees_only_chunks_its_groups_grant(searchable: Server) -> None:
    alpha = _search(searchable, {"groups": ["jira:alpha-team"]})

    assert alpha, "the ALPHA team sees its project's issues"
    assert all("group:jira:alpha-team" in _acl(searchable, hit["entity_id"]) for hit in alpha)
    assert {hit["natural_key"].split("-")[0] for hit in alpha} == {"ALPHA"}


def test_two_people_with_different_rights_get_different_answers(searchable: Server) -> None:
    team = {h["entity_id"] for h in _search(searchable, {"groups": ["jira:alpha-team"]})}
    leads = {h["entity_id"] for h in _search(searchable, {"groups": ["jira:alpha-team", "jira:alpha-leads"]})}

    # Issues under ALPHA's security level are visible to its leads only.
    assert team < leads


def test_a_principal_with_no_rights_sees_nothing(searchable: Server) -> None:
    assert _search(searchable, {"user": "stranger@example.org"}) == []


def test_search_needs_a_token_and_names_a_bad_field(searchable: Server) -> None:
    with searchable.client(None) as c:
        assert c.post("/api/v1/search", json={"query": "x", "principal": {}}).status_code == 401
    with searchable.client("admin") as c:
        r = c.post("/api/v1/search", json={"query": "x", "principal": {}, "k": 0})
        nobody = c.post("/api/v1/search", json={"query": "x"})
    assert r.status_code == 422
    assert r.json().get("field") == "k" or "k" in r.json()["detail"]
    assert nobody.status_code == 422 and nobody.json()["field"] == "principal"  # an admin names whom


def test_results_are_distinct_entities_with_one_score_and_safe_highlights(searchable: Server) -> None:
    groups = {"groups": ["jira:alpha-team", "jira:alpha-leads", "jira:beta-team"]}
    vector = _search(searchable, groups)
    hybrid = _search(searchable, groups, hybrid=True)

    for results in (vector, hybrid):
        assert results and len({h["entity_id"] for h in results}) == len(results)
        scores = [h["score"] for h in results]
        assert all(0 <= s <= 1 for s in scores) and scores == sorted(scores, reverse=True)
    assert all(h["highlights"] == [] and h["text_rank"] is None for h in vector)
    assert all(abs(h["score"] - (1 - h["vector_distance"] / 2)) < 1e-9 for h in vector)
    texts = [h for h in hybrid if "text" in h["matched_by"]]
    assert texts and all(h["text_rank"] is not None for h in texts)
    marked = [s for h in texts for f in h["highlights"] for s in f if s["mark"]]
    assert marked and all(set(s) == {"text", "mark"} for h in texts for f in h["highlights"] for s in f)


def _token(server: Server, **body: object) -> str:
    with server.client("admin") as c:
        r = c.post("/api/v1/tokens", json={"name": f"portal-{uuid.uuid4().hex[:6]}", **body})
    assert r.status_code == 201, r.text
    token: str = r.json()["token"]
    return token


def test_a_search_token_searches_only_as_its_bound_principals(searchable: Server) -> None:
    token = _token(searchable, scope="search", principals=["group:jira:alpha-team"])
    with httpx.Client(base_url=searchable.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as c:
        own = c.post("/api/v1/search", json={"query": "login fails", "k": 50})
        named = c.post("/api/v1/search", json={"query": "login fails", "principal": {"groups": ["jira:alpha-team"]}})
        other = c.post(
            "/api/v1/search",
            json={"query": "login fails", "principal": {"groups": ["jira:alpha-team", "jira:alpha-leads"]}},
        )
        someone = c.post("/api/v1/search", json={"query": "login fails", "principal": {"user": "boss@example.com"}})
        elsewhere = c.get("/api/v1/sources")
    assert own.status_code == 200 and own.json()["results"]
    assert all("group:jira:alpha-team" in _acl(searchable, h["entity_id"]) for h in own.json()["results"])
    assert named.status_code == 200
    for refused in (other, someone):
        assert refused.status_code == 403, refused.text
        assert refused.json()["field"] == "principal" and "principals" in refused.json()["detail"]
    assert "group:jira:alpha-leads" in other.json()["detail"]
    assert elsewhere.status_code == 403  # a search token only searches

    with searchable.client("read") as reader:
        r = reader.post("/api/v1/search", json={"query": "x", "principal": {"groups": ["jira:alpha-team"]}})
    assert r.status_code == 403 and "search" in r.json()["detail"]

    with searchable.client("admin") as admin:
        unbound = admin.post("/api/v1/tokens", json={"name": "portal-x", "scope": "search"})
        bound_read = admin.post("/api/v1/tokens", json={"name": "x", "scope": "read", "principals": ["user:a"]})
        two_users = admin.post(
            "/api/v1/tokens", json={"name": "y", "scope": "search", "principals": ["user:a", "user:b"]}
        )
    for bad in (unbound, bound_read, two_users):
        assert bad.status_code == 422 and bad.json()["field"] == "principals", bad.text


def test_principals_lists_acl_users_and_groups_with_counts_paged(searchable: Server) -> None:
    with psycopg.connect(searchable.db_url) as conn:
        truth: dict[str, int] = dict(
            conn.execute(
                "select p, count(distinct e.id) from entities e, unnest(e.acl_principals) p"
                " where e.deleted_at is null group by p"
            ).fetchall()
        )
    seen: dict[str, int] = {}
    cursor: str | None = None
    with searchable.client("admin") as c:
        for _ in range(1000):
            r = c.get("/api/v1/principals", params={"limit": 2, **({"cursor": cursor} if cursor else {})})
            assert r.status_code == 200, r.text
            page = r.json()
            assert len(page["items"]) <= 2
            seen.update({i["principal"]: i["entities"] for i in page["items"]})
            cursor = page["next_cursor"]
            if cursor is None:
                break
        groups = c.get("/api/v1/principals", params={"kind": "group", "prefix": "group:jira:alpha"}).json()
        bad = c.get("/api/v1/principals", params={"cursor": "%%%"})
    assert seen == truth and len(truth) > 2
    assert groups["items"] and all(i["principal"].startswith("group:jira:alpha") for i in groups["items"])
    assert all(i["kind"] == "group" for i in groups["items"]) and groups["next_cursor"] is None
    assert bad.status_code == 422 and bad.json()["field"] == "cursor"
    with searchable.client("read") as reader:
        assert reader.get("/api/v1/principals").status_code == 403
