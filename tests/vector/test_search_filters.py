"""Search's filters (source ids, source types, statuses, the update window) narrow the vector query and the
full-text query alike, each within what the principal may see (POST /api/v1/search ``filters``)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from app.secrets import Keyring
from app.vector.search import Principal, SearchFilters, SearchResult, search, text_search
from app.vector.stage import VectorStage
from connectors.base import Entity
from tests.vector.conftest import entity, load_entities, plain_source
from tests.vector.fakes import HashEmbedder

ALL = Principal(None, ("group:jira:all",))
# Every chunk below says this; the vector side ranks all of them, the text side matches all of them.
WORDS = "migration failed on the staging host"


def _at(n: int, day: int, principals: tuple[str, ...] = ("group:jira:all",), **options: Any) -> Entity:
    """Entity n, updated on day ``day`` of January 2024."""
    return replace(entity(n, f"{WORDS} {n}", principals, **options), updated_at=datetime(2024, 1, day, tzinfo=UTC))


@pytest.fixture
def corpus(conn: psycopg.Connection[Any], keyring: Keyring) -> tuple[HashEmbedder, int, int]:
    alpha, beta = plain_source(conn, keyring, "alpha"), plain_source(conn, keyring, "beta")
    embedder = HashEmbedder()
    load_entities(conn, alpha, [
        _at(1, 1), _at(2, 5, source_type="page"), _at(3, 9, status="draft"), _at(4, 12, status="archived"),
        _at(5, 14, ("group:jira:secret",)),  # matches every filter below, but the principal may not see it
    ], VectorStage(embedder))  # fmt: skip
    load_entities(conn, beta, [_at(11, 3), _at(12, 7, source_type="page"), _at(13, 20)], VectorStage(embedder))
    conn.commit()
    return embedder, alpha, beta


def _keys(results: list[SearchResult]) -> set[str | None]:
    return {r.natural_key for r in results}


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (SearchFilters(), {"IT-1", "IT-2", "IT-4", "IT-11", "IT-12", "IT-13"}),  # drafts only when asked for
        (SearchFilters(source_types=("page",)), {"IT-2", "IT-12"}),
        (SearchFilters(statuses=("draft", "archived")), {"IT-3", "IT-4"}),
        (SearchFilters(updated_from=datetime(2024, 1, 5, tzinfo=UTC)), {"IT-2", "IT-4", "IT-12", "IT-13"}),
        (SearchFilters(updated_to=datetime(2024, 1, 5, tzinfo=UTC)), {"IT-1", "IT-11"}),  # [from, to)
        (
            SearchFilters(
                source_types=("ticket",),
                updated_from=datetime(2024, 1, 2, tzinfo=UTC),
                updated_to=datetime(2024, 1, 31, tzinfo=UTC),
            ),
            {"IT-4", "IT-11", "IT-13"},
        ),
    ],
)
def test_each_filter_narrows_the_vector_and_the_text_query_alike(
    conn: psycopg.Connection[Any],
    corpus: tuple[HashEmbedder, int, int],
    filters: SearchFilters,
    expected: set[str],
) -> None:
    embedder, _, _ = corpus
    vector = search(conn, embedder, query=WORDS, principal=ALL, k=20, filters=filters)
    text = text_search(conn, WORDS, ALL.tokens(), 20, filters)
    assert _keys(vector) == expected
    assert _keys(text) == expected
    # The text side ranks best first, each entity once.
    ranks = [r.text_rank for r in text]
    assert None not in ranks and ranks == sorted(ranks, reverse=True)  # type: ignore[type-var]
    assert len({r.entity_id for r in text}) == len(text)


def test_the_source_filter_and_k_apply_after_the_rights(
    conn: psycopg.Connection[Any], corpus: tuple[HashEmbedder, int, int]
) -> None:
    embedder, alpha, beta = corpus
    only_beta = SearchFilters(source_ids=(beta,))
    assert _keys(search(conn, embedder, query=WORDS, principal=ALL, k=20, filters=only_beta)) == {
        "IT-11", "IT-12", "IT-13",
    }  # fmt: skip
    assert _keys(text_search(conn, WORDS, ALL.tokens(), 20, only_beta)) == {"IT-11", "IT-12", "IT-13"}
    # k caps the result after the rights and the filters: two of alpha's three visible entities, never IT-5.
    only_alpha = SearchFilters(source_ids=(alpha,))
    for found in (
        text_search(conn, WORDS, ALL.tokens(), 2, only_alpha),
        search(conn, embedder, query=WORDS, principal=ALL, k=2, filters=only_alpha),
    ):
        assert len(found) == 2 and _keys(found) <= {"IT-1", "IT-2", "IT-4"}
    secret = Principal(None, ("group:jira:secret",))
    assert _keys(text_search(conn, WORDS, secret.tokens(), 20, SearchFilters(source_types=("ticket",)))) == {"IT-5"}
