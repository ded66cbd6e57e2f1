"""Permission-filtered semantic search and its hybrid (full-text + vector) variant (issue 5, items 3-4).

``search`` is what ``POST /api/v1/search`` and ``harvester search`` call. The vector side is ONE SQL
statement (``SearchChunks`` in sql/queries/search.sql) doing the similarity ordering and every
visibility rule together; the HNSW settings it relies on are set first, transaction-locally, by
``ConfigureVectorScan`` in the same transaction.

Visibility: a chunk is returned only when its (inherited) ACL shares a token with the principal's
(``user:<email>``, ``group:<connector>:<id>``), its entity is not soft-deleted, it is not a draft
(unless platform setting ``search_include_drafts`` or a ``statuses`` filter naming ``draft``), and
its vector was made by the query's model: distances between two models' vectors mean nothing, so
during a re-embed each model's searches see that model's vectors (old ones keep serving processes
still on the old model until replaced).

Hybrid (``hybrid=True``): the top ``HYBRID_CANDIDATES`` of the vector and of the full-text query
are fused by reciprocal rank fusion, score = sum of 1 / (RRF_K + rank); the same visibility rules
hold in both queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg

from app.embedding import Embedder
from app.queries import search as sq
from app.vector.stage import vector_text

# HNSW candidate list per scan step; recall/latency measured in bench/vector_search.py.
EF_SEARCH = 100
# Index tuples one iterative scan may visit before SearchChunks' exact branch takes over: at 1 %
# visibility this still finds k = 10 visible chunks ~200 times over.
MAX_SCAN_TUPLES = 20_000
# A principal who sees less than this share of all chunks is served by an exact sort of just those
# chunks (found through the ACL index): cheaper than an HNSW scan visiting ~k / share tuples.
NARROW_SHARE = 0.02
HYBRID_CANDIDATES = 50
RRF_K = 60  # the constant of Cormack et al. (2009); damps the weight of the very first ranks
MAX_K = 1000


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is searching: a user id/email and group ids, as the connectors write ACL principals."""

    user: str | None
    groups: tuple[str, ...] = ()

    def tokens(self) -> list[str]:
        """ACL tokens this principal holds: ``user:<id>`` and ``group:<connector>:<id>``."""
        out: list[str] = []
        if self.user:
            user = self.user if self.user.startswith("user:") else f"user:{self.user}"
            out.append(user)
            if user.lower() != user:
                out.append(user.lower())  # emails are case-insensitive; connectors write them as given
        for group in self.groups:
            if group:
                out.append(group if group.startswith("group:") else f"group:{group}")
        return sorted(set(out))


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Optional narrowing; None = no filter. ``updated_*`` is the source's update time, [from, to)."""

    source_ids: tuple[int, ...] | None = None
    source_types: tuple[str, ...] | None = None
    statuses: tuple[str, ...] | None = None
    updated_from: datetime | None = None
    updated_to: datetime | None = None


@dataclass(frozen=True, slots=True)
class SearchResult:
    chunk_id: int
    entity_id: int
    text: str  # the chunk as embedded: entity title, blank line, fragment
    title: str
    url: str | None
    natural_key: str | None
    source_id: int
    source_name: str
    source_type: str
    status: str
    updated_at: datetime | None
    distance: float | None  # cosine distance to the query; None when only full-text found it
    score: float  # 1 - distance for vector search; the RRF score for hybrid
    matched_by: tuple[str, ...] = field(default=("vector",))


def search(
    conn: psycopg.Connection[Any],
    embedder: Embedder,
    *,
    query: str,
    principal: Principal,
    k: int = 10,
    filters: SearchFilters | None = None,
    hybrid: bool = False,
) -> list[SearchResult]:
    """The k best chunks ``principal`` may see for ``query``, best first."""
    if not 1 <= k <= MAX_K:
        raise ValueError(f"k must be between 1 and {MAX_K}")
    tokens = principal.tokens()
    if not tokens or not query.strip():
        return []
    filters = filters or SearchFilters()
    embedding = vector_text(embedder.embed([query])[0])
    with conn.transaction():
        vector = vector_search(
            conn, embedding, embedder.model_name, tokens, max(k, HYBRID_CANDIDATES) if hybrid else k, filters
        )
        if not hybrid:
            return vector
        text = text_search(conn, query, tokens, HYBRID_CANDIDATES, filters)
    return reciprocal_rank_fusion([vector, text], ["vector", "text"], k)


def vector_search(
    conn: psycopg.Connection[Any],
    embedding: str,
    model: str,
    tokens: list[str],
    k: int,
    filters: SearchFilters,
    *,
    ef_search: int = EF_SEARCH,
    max_scan_tuples: int = MAX_SCAN_TUPLES,
    narrow_share: float = NARROW_SHARE,
) -> list[SearchResult]:
    """SearchChunks after its transaction-local HNSW settings (call inside a transaction)."""
    sq.configure_vector_scan(conn, ef_search=max(ef_search, k), max_scan_tuples=max_scan_tuples)
    rows = sq.search_chunks(
        conn,
        query_embedding=embedding,
        principals=tokens,
        model=model,
        k=k,
        narrow_share=narrow_share,
        **_filter_args(filters),
    )
    return [
        SearchResult(
            chunk_id=r.chunk_id,
            entity_id=r.entity_id,
            text=r.body,
            title=r.title,
            url=r.url,
            natural_key=r.natural_key,
            source_id=r.source_id,
            source_name=r.source_name,
            source_type=r.source_type,
            status=r.status,
            updated_at=r.source_updated_at,
            distance=r.distance,
            score=1.0 - r.distance,
        )
        for r in rows
    ]


def text_search(
    conn: psycopg.Connection[Any], query: str, tokens: list[str], k: int, filters: SearchFilters
) -> list[SearchResult]:
    """SearchChunksText: full-text candidates under the same visibility rules."""
    rows = sq.search_chunks_text(conn, query_text=query, principals=tokens, k=k, **_filter_args(filters))
    return [
        SearchResult(
            chunk_id=r.chunk_id,
            entity_id=r.entity_id,
            text=r.body,
            title=r.title,
            url=r.url,
            natural_key=r.natural_key,
            source_id=r.source_id,
            source_name=r.source_name,
            source_type=r.source_type,
            status=r.status,
            updated_at=r.source_updated_at,
            distance=None,
            score=r.rank,
            matched_by=("text",),
        )
        for r in rows
    ]


def reciprocal_rank_fusion(
    lists: Sequence[Sequence[SearchResult]], names: Sequence[str], k: int, rrf_k: int = RRF_K
) -> list[SearchResult]:
    """Fuse ranked lists: score(d) = sum over lists of 1 / (rrf_k + rank of d), rank from 1."""
    scores: dict[int, float] = {}
    first: dict[int, SearchResult] = {}
    distance: dict[int, float] = {}
    matched: dict[int, list[str]] = {}
    for results, name in zip(lists, names, strict=True):
        for rank, result in enumerate(results, start=1):
            scores[result.chunk_id] = scores.get(result.chunk_id, 0.0) + 1.0 / (rrf_k + rank)
            first.setdefault(result.chunk_id, result)
            matched.setdefault(result.chunk_id, []).append(name)
            if result.distance is not None:
                distance[result.chunk_id] = result.distance
    order = sorted(scores, key=lambda cid: (-scores[cid], cid))[:k]
    fused: list[SearchResult] = []
    for cid in order:
        base = first[cid]
        fused.append(
            SearchResult(
                chunk_id=cid,
                entity_id=base.entity_id,
                text=base.text,
                title=base.title,
                url=base.url,
                natural_key=base.natural_key,
                source_id=base.source_id,
                source_name=base.source_name,
                source_type=base.source_type,
                status=base.status,
                updated_at=base.updated_at,
                distance=distance.get(cid),
                score=scores[cid],
                matched_by=tuple(matched[cid]),
            )
        )
    return fused


def _filter_args(filters: SearchFilters) -> dict[str, Any]:
    return {
        "source_ids": list(filters.source_ids) if filters.source_ids is not None else None,
        "source_types": list(filters.source_types) if filters.source_types is not None else None,
        "statuses": list(filters.statuses) if filters.statuses is not None else None,
        "updated_from": filters.updated_from,
        "updated_to": filters.updated_to,
    }
