"""POST /api/v1/search through a real server: results respect the principal's rights (issue 5 item 3)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

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
    server: Server, principal: dict[str, object], scope: str = "read", **extra: object
) -> list[dict[str, object]]:
    with server.client(scope) as c:
        r = c.post(
            "/api/v1/search",
            json={"query": "login fails after the session expires", "principal": principal, "k": 50, **extra},
        )
    assert r.status_code == 200, r.text
    results: list[dict[str, object]] = r.json()["results"]
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
    assert {hit["natural_key"].split("-")[0] for hit in alpha} == {"ALPHA"}  # type: ignore[union-attr]


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
    with searchable.client("read") as c:
        r = c.post("/api/v1/search", json={"query": "x", "principal": {}, "k": 0})
    assert r.status_code == 422
    assert r.json().get("field") == "k" or "k" in r.json()["detail"]
