"""Full-text side (Russian and English stemming) and reciprocal rank fusion of hybrid search (issue 5)."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from app.secrets import Keyring
from app.vector.search import (
    Principal,
    SearchFilters,
    SearchResult,
    Segment,
    parse_headline,
    reciprocal_rank_fusion,
    search,
    text_search,
)
from app.vector.stage import VectorStage
from tests.vector.conftest import entity, load_entities, plain_source
from tests.vector.fakes import HashEmbedder

ALL = Principal(None, ("group:jira:all",))


def _load(conn: psycopg.Connection[Any], keyring: Keyring) -> HashEmbedder:
    source_id = plain_source(conn, keyring)
    embedder = HashEmbedder()
    texts = {
        1: "Пользователи не могут войти в систему после обновления.",
        2: "Migrations are failing on the staging database.",
        3: "Квартальный отчёт по продажам готов.",
        4: "The dashboard shows stale numbers.",
        5: "Миграция базы данных упала на стенде.",
    }
    rows = [entity(n, text, ["group:jira:all"], title="") for n, text in texts.items()]
    rows.append(entity(6, "Migration failed again: secret roadmap.", ["group:jira:secret"], title=""))
    rows.append(entity(7, "Migration failed in a draft.", ["group:jira:all"], title="", status="draft"))
    load_entities(conn, source_id, rows, VectorStage(embedder))
    return embedder


def _keys(results: list[SearchResult]) -> list[str | None]:
    return [r.natural_key for r in results]


def test_full_text_stems_russian_and_english_and_keeps_visibility_rules(
    conn: psycopg.Connection[Any], keyring: Keyring
) -> None:
    _load(conn, keyring)
    tokens = ALL.tokens()
    # Other word forms than the text holds: пользователь/пользователи, войти; migration/migrations/failing.
    assert _keys(text_search(conn, "пользователь войти", tokens, 10, SearchFilters())) == ["IT-1"]
    assert _keys(text_search(conn, "migration failed", tokens, 10, SearchFilters())) == ["IT-2"]
    assert _keys(text_search(conn, "миграции", tokens, 10, SearchFilters())) == ["IT-5"]
    # Any lexeme may match (OR); the chunk holding more of them ranks first.
    assert _keys(text_search(conn, "stale dashboard numbers отчёт", tokens, 10, SearchFilters())) == ["IT-4", "IT-3"]
    assert text_search(conn, "the and of", tokens, 10, SearchFilters()) == []  # only stop words


def test_hybrid_fuses_both_rankings_under_the_same_rights(conn: psycopg.Connection[Any], keyring: Keyring) -> None:
    embedder = _load(conn, keyring)
    results = search(conn, embedder, query="migration failed", principal=ALL, k=5, hybrid=True)
    assert len(results) == 5
    assert results[0].natural_key == "IT-2" and results[0].matched_by == ("vector", "text")
    assert {r.natural_key for r in results}.isdisjoint({"IT-6", "IT-7"})  # other ACL; draft
    assert len({r.entity_id for r in results}) == 5 and all(0 < r.score <= 1 for r in results)
    # The text match carries highlights: plain segments, the query's words marked.
    marked = {s.text.lower() for fragment in results[0].highlights for s in fragment if s.mark}
    assert marked and marked <= {"migrations", "failing", "migration", "failed"}
    assert "".join(s.text for s in results[0].highlights[0]) in results[0].snippet
    assert all(r.highlights == () for r in results if "text" not in r.matched_by)
    secret = search(conn, embedder, query="migration", principal=Principal(None, ("jira:secret",)), k=5, hybrid=True)
    assert _keys(secret) == ["IT-6"]


def test_reciprocal_rank_fusion_sums_inverse_ranks_per_entity_into_one_score() -> None:
    def result(
        entity_id: int, chunk_id: int, *, distance: float | None = None, rank: float | None = None
    ) -> SearchResult:
        return SearchResult(
            entity_id, chunk_id, "", "", None, None, 1, "s", "ticket", "final", None, 0.5,
            vector_distance=distance, text_rank=rank,
        )

    vector = [result(1, 11, distance=0.2), result(2, 21, distance=0.3), result(3, 31, distance=0.4)]
    text = [result(3, 32, rank=0.9), result(4, 41, rank=0.5)]
    fused = reciprocal_rank_fusion([vector, text], ["vector", "text"], k=4, rrf_k=60)
    assert [r.entity_id for r in fused] == [3, 1, 2, 4]
    # One score in [0, 1]: RRF over its maximum, 2 / 61 (first in both lists).
    assert fused[0].score == pytest.approx((1 / 63 + 1 / 61) / (2 / 61)) and fused[0].matched_by == ("vector", "text")
    scores = [r.score for r in fused]
    assert all(0 < s <= 1 for s in scores) and scores == sorted(scores, reverse=True)
    # Entity 3's snippet is its full-text chunk (the one the highlights mark), with both raw components.
    assert (fused[0].chunk_id, fused[0].vector_distance, fused[0].text_rank) == (32, 0.4, 0.9)
    assert (fused[3].vector_distance, fused[3].text_rank) == (None, 0.5)
    assert reciprocal_rank_fusion([[result(1, 11)], [result(1, 12)]], ["vector", "text"], k=1)[0].score == 1.0


def test_parse_headline_yields_plain_segments_and_drops_fragments_without_a_match() -> None:
    raw = "Users \x02login\x03 fails <b>after</b> \x02logins\x03\x1eopening words only"
    assert parse_headline(raw) == (
        (Segment("Users ", False), Segment("login", True), Segment(" fails <b>after</b> ", False),
         Segment("logins", True)),
    )
    assert parse_headline("") == ()


def test_principal_tokens() -> None:
    assert Principal("Anna@Example.com", ("jira:alpha-team", "group:slack:U1")).tokens() == [
        "group:jira:alpha-team", "group:slack:U1", "user:Anna@Example.com", "user:anna@example.com",
    ]
    assert Principal(None).tokens() == []
