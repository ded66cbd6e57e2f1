"""Permission-filtered search (issue 5 item 3; issue 14 §4): one SQL query orders by vector distance,
groups chunks into entities and filters by the searched-for principal's rights, soft deletion and drafts
(app/vector/search.py).

The principal is the end user the search is made for. Who may search as whom (docs/decisions.md): an
``admin`` token as any principal it names (the Admin Panel's "search as"); a ``search`` token only as the
principals bound to it at creation (``harvester token create --scope search --principal ...``), and as
exactly those when the request names none; a ``read`` token not at all.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from litestar import Controller, Request, post
from litestar.datastructures import State
from msgspec import Meta

from app.api.auth import principal_of
from app.api.db import Database
from app.api.problems import ProblemError, problem_responses
from app.api.schemas import Input
from app.vector.config import process_embedder
from app.vector.search import Principal, SearchFilters, SearchResult, search

R = problem_responses
Status = Literal["draft", "final", "archived"]
GroupList = Annotated[list[Annotated[str, Meta(min_length=1, max_length=300)]], Meta(max_length=500)]
SEARCH = {"auth": "search"}


class PrincipalIn(Input):
    user: Annotated[str, Meta(min_length=1, max_length=320, description="user id or e-mail")] | None = None
    groups: GroupList = msgspec.field(default_factory=list)


class SearchFiltersIn(Input):
    source_ids: Annotated[list[Annotated[int, Meta(ge=1)]], Meta(max_length=100)] | None = None
    source_types: Annotated[list[Annotated[str, Meta(min_length=1, max_length=50)]], Meta(max_length=20)] | None = None
    statuses: list[Status] | None = None
    updated_from: datetime | None = None
    updated_to: datetime | None = None


class SearchIn(Input):
    query: Annotated[str, Meta(min_length=1, max_length=2000)]
    principal: Annotated[
        PrincipalIn | None,
        Meta(
            description="whom to search as; required with an admin token; with a search token a subset of its "
            "bound principals, absent: all of them"
        ),
    ] = None
    k: Annotated[int, Meta(ge=1, le=100, description="entities to return")] = 10
    filters: SearchFiltersIn | None = None
    hybrid: bool = False


class SegmentOut(msgspec.Struct):
    """A run of plain text in a highlight fragment; ``mark``: it matches the query. Render as text, never HTML."""

    text: str
    mark: bool


class SearchHitOut(msgspec.Struct):
    """One entity the principal may see, shown by its best chunk."""

    entity_id: int
    title: str
    url: str | None
    natural_key: str | None
    source_id: int
    source_name: str
    source_type: str
    status: str
    updated_at: datetime | None
    score: Annotated[
        float,
        Meta(
            ge=0,
            le=1,
            description="relevance in [0, 1], higher is better. Vector search: 1 - cosine distance / 2; hybrid: "
            "reciprocal rank fusion divided by its maximum (first in both rankings = 1). Ranks results within "
            "one response; not comparable between modes",
        ),
    ]
    vector_distance: Annotated[
        float | None, Meta(description="cosine distance (0..2) of the best chunk; null: not found by vector search")
    ]
    text_rank: Annotated[
        float | None, Meta(description="ts_rank_cd of the best matching chunk (hybrid); null: no full-text match")
    ]
    matched_by: Annotated[list[str], Meta(description="which rankings found the entity: vector, text")]
    chunk_id: Annotated[int, Meta(description="the best chunk, shown as the snippet")]
    snippet: Annotated[str, Meta(description="the best chunk's text: entity title, blank line, fragment")]
    highlights: Annotated[
        list[list[SegmentOut]],
        Meta(
            description="hybrid only: up to three fragments of the snippet around the query's words, each a list "
            "of plain-text segments; marked segments match. Empty in vector mode or without a word match"
        ),
    ]


class SearchOut(msgspec.Struct):
    results: list[SearchHitOut]


def hit_out(h: SearchResult) -> SearchHitOut:
    """One search hit as the API (and ``harvester search --json``) renders it."""
    return SearchHitOut(
        entity_id=h.entity_id,
        title=h.title,
        url=h.url,
        natural_key=h.natural_key,
        source_id=h.source_id,
        source_name=h.source_name,
        source_type=h.source_type,
        status=h.status,
        updated_at=h.updated_at,
        score=h.score,
        vector_distance=h.vector_distance,
        text_rank=h.text_rank,
        matched_by=list(h.matched_by),
        chunk_id=h.chunk_id,
        snippet=h.snippet,
        highlights=[[SegmentOut(s.text, s.mark) for s in fragment] for fragment in h.highlights],
    )


def _searched_as(asked: PrincipalIn | None, scope: str, bound: tuple[str, ...]) -> Principal:
    """Whom this token may search as (module docstring); 403 naming `principal` otherwise."""
    if scope != "search":
        if asked is None:
            raise ProblemError(422, "invalid-field", "principal: name whom to search as", field="principal")
        return Principal(user=asked.user, groups=tuple(asked.groups))
    own = Principal.of_tokens(bound)
    if asked is None:
        return own
    wanted = Principal(user=asked.user, groups=tuple(asked.groups))
    # Users compare case-insensitively (Principal.tokens() searches both spellings of an e-mail).
    allowed = {t.lower() if t.startswith("user:") else t for t in own.tokens()}
    outside = sorted({t for t in wanted.tokens() if (t.lower() if t.startswith("user:") else t) not in allowed})
    if outside:
        raise ProblemError(
            403,
            "forbidden",
            "principal: this search token may search only as its bound principals; not bound: " + ", ".join(outside),
            field="principal",
        )
    return wanted


class SearchController(Controller):
    path = "/search"
    tags = ("search",)

    @post(
        "/",
        operation_id="search",
        sync_to_thread=True,
        status_code=200,
        opt=SEARCH,
        responses=R(400, 401, 403, 413, 415, 422, 503),
    )
    def search(self, data: SearchIn, db: Database, state: State, request: Request[Any, Any, Any]) -> SearchOut:
        """The k entities most relevant to the query that the principal may see (unknown ACL: nobody).

        Each entity appears once, shown by its best chunk (`snippet`; `highlights` in hybrid mode), with
        one `score` in [0, 1]. Needs an admin token (any `principal`) or a search token (only its bound
        principals: 403 naming `principal` otherwise); a read token gets 403.
        """
        token = principal_of(request)
        principal = _searched_as(data.principal, token.scope, token.principals)
        embedder = process_embedder(state.embedder_config)
        if embedder is None:
            raise ProblemError(503, "unavailable", "no embedder is configured (HARVESTER_EMBEDDER=none)")
        f = data.filters
        filters = SearchFilters(
            source_ids=tuple(f.source_ids) if f and f.source_ids else None,
            source_types=tuple(f.source_types) if f and f.source_types else None,
            statuses=tuple(f.statuses) if f and f.statuses else None,
            updated_from=f.updated_from if f else None,
            updated_to=f.updated_to if f else None,
        )
        with db.tx() as conn:
            hits = search(
                conn, embedder, query=data.query, principal=principal, k=data.k, filters=filters, hybrid=data.hybrid
            )
        return SearchOut([hit_out(h) for h in hits])
