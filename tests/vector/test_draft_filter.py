"""Drafts (seed 000: unpublished content) are hidden by default and returned by an explicit
``statuses=[draft]`` filter, in both the vector and the full-text query (issue 12, item 1)."""

from __future__ import annotations

from typing import Any

import psycopg

from app.secrets import Keyring
from app.vector.search import Principal, SearchFilters, search, text_search
from app.vector.stage import VectorStage
from tests.vector.conftest import entity, load_entities, plain_source
from tests.vector.fakes import HashEmbedder

ALL = Principal(None, ("group:jira:all",))


def _load(conn: psycopg.Connection[Any], keyring: Keyring) -> HashEmbedder:
    source_id = plain_source(conn, keyring)
    embedder = HashEmbedder()
    rows = [
        entity(1, "Release notes for the migration.", ["group:jira:all"], title=""),
        entity(2, "Unpublished migration plan, work in progress.", ["group:jira:all"], title="", status="draft"),
    ]
    load_entities(conn, source_id, rows, VectorStage(embedder))
    return embedder


def test_an_explicit_draft_filter_returns_drafts(conn: psycopg.Connection[Any], keyring: Keyring) -> None:
    embedder = _load(conn, keyring)
    drafts = SearchFilters(statuses=("draft",))

    assert [r.natural_key for r in search(conn, embedder, query="migration", principal=ALL, k=5)] == ["IT-1"]
    assert [r.natural_key for r in search(conn, embedder, query="migration", principal=ALL, k=5, filters=drafts)] == [
        "IT-2"
    ]
    assert [r.natural_key for r in text_search(conn, "migration", ALL.tokens(), 5, drafts)] == ["IT-2"]
