"""Permission-filtered semantic search (issue 5 item 3): one SQL query orders by vector distance and
filters by the caller-supplied principal's rights, soft deletion and drafts (app/vector/search.py).

The principal is the end user the Admin Panel (or the search layer) searches for; the bearer token only
says that the caller may search at all (scope read suffices).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec
from litestar import Controller, post
from litestar.datastructures import State
from msgspec import Meta

from app.api.db import Database
from app.api.problems import ProblemError, problem_responses
from app.api.schemas import Input
from app.vector.config import process_embedder
from app.vector.search import Principal, SearchFilters, SearchResult, search

R = problem_responses
Status = Literal["draft", "final", "archived"]
GroupList = Annotated[list[Annotated[str, Meta(min_length=1, max_length=300)]], Meta(max_length=500)]


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
    principal: PrincipalIn
    k: Annotated[int, Meta(ge=1, le=100)] = 10
    filters: SearchFiltersIn | None = None
    hybrid: bool = False


class SearchHitOut(msgspec.Struct):
    chunk_id: int
    entity_id: int
    text: str
    title: str
    url: str | None
    natural_key: str | None
    source_id: int
    source_name: str
    source_type: str
    status: str
    updated_at: datetime | None
    distance: float | None
    score: float
    matched_by: list[str]


class SearchOut(msgspec.Struct):
    results: list[SearchHitOut]


def hit_out(h: SearchResult) -> SearchHitOut:
    """One search hit as the API (and ``harvester search --json``) renders it."""
    return SearchHitOut(
        h.chunk_id,
        h.entity_id,
        h.text,
        h.title,
        h.url,
        h.natural_key,
        h.source_id,
        h.source_name,
        h.source_type,
        h.status,
        h.updated_at,
        h.distance,
        h.score,
        list(h.matched_by),
    )


class SearchController(Controller):
    path = "/search"
    tags = ("search",)

    @post(
        "/",
        operation_id="search",
        sync_to_thread=True,
        status_code=200,
        opt={"auth": "read"},
        responses=R(400, 401, 413, 415, 422, 503),
    )
    def search(self, data: SearchIn, db: Database, state: State) -> SearchOut:
        """The k chunks nearest to the query that the principal may see (unknown ACL: nobody)."""
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
        principal = Principal(user=data.principal.user, groups=tuple(data.principal.groups))
        with db.tx() as conn:
            hits = search(
                conn, embedder, query=data.query, principal=principal, k=data.k, filters=filters, hybrid=data.hybrid
            )
        return SearchOut([hit_out(h) for h in hits])
