"""Permission-filtered semantic search and its hybrid (full-text + vector) variant (issue 5, items 3-4).

``search`` is what ``POST /api/v1/search`` and ``harvester search`` call. Results are entities (issue 14
§4): k results are k distinct entities, each shown by its best chunk (the snippet), so one long ticket
cannot fill the top places. The vector side is ONE SQL statement (``SearchEntities`` in
sql/queries/search.sql) doing the similarity ordering, the grouping and every visibility rule together;
the HNSW settings it relies on are set first, transaction-locally, by ``ConfigureVectorScan`` in the
same transaction.

Visibility: a chunk is returned only when its (inherited) ACL shares a token with the principal's
(``user:<email>``, ``group:<connector>:<id>``), its entity is not soft-deleted, it is not a draft
(unless platform setting ``search_include_drafts`` or a ``statuses`` filter naming ``draft``), and
its vector was made by the query's model: distances between two models' vectors mean nothing, so
during a re-embed each model's searches see that model's vectors (old ones keep serving processes
still on the old model until replaced).

Hybrid (``hybrid=True``): the top ``HYBRID_CANDIDATES`` entities of the vector and of the full-text
query are fused by reciprocal rank fusion, RRF = sum of 1 / (RRF_K + rank); the same visibility rules
hold in both queries. Hybrid results carry ``highlights``: the query's words in the snippet, as plain
text segments (``ts_headline`` through ``HighlightChunks``), so no markup from content reaches a UI.

``score`` is one relevance in [0, 1], higher is better, in every mode: vector search
``1 - cosine distance / 2``; hybrid the RRF divided by its maximum (rank 1 in both lists). Scores rank
results within one response; they are not comparable between modes. The raw components are
``vector_distance`` (cosine distance, 0..2) and ``text_rank`` (``ts_rank_cd``), None where a side did
not find the entity.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from itertools import combinations
from math import comb
from typing import Any

import psycopg

from app.embedding import Embedder
from app.queries import search as sq
from app.vector.stage import vector_text

# HNSW candidate list per scan step. 800, not pgvector's 40 or our earlier 100: at a million chunks
# (bench/search_million.py, docs/performance.md) entity recall@10 was 0.83 at 100, 0.93 at 400 and 0.95
# at 800, at a p95 of 1.4 % of an exact scan; below ~100 k chunks every value answers in a few ms.
EF_SEARCH = 800
MAX_EF_SEARCH = 1000  # pgvector's upper bound for hnsw.ef_search
# Index tuples one iterative scan may visit before SearchEntities' exact branch takes over: at 1 %
# visibility this still finds k = 10 visible chunks ~200 times over.
MAX_SCAN_TUPLES = 20_000
# A principal who sees less than this share of all chunks is served by an exact sort of just those
# chunks (found through the ACL index): cheaper than an HNSW scan visiting ~k / share tuples ...
NARROW_SHARE = 0.02
# ... or fewer than NARROW_MIN chunks, whatever the table's size: a few thousand chunks are sorted faster
# than an HNSW scan walks even a small table (a tenth of 50 k chunks: 6.7 against 14.6 ms; decision 111) ...
NARROW_MIN = 5_000
# ... but never one on more than NARROW_MAX: the probe that counts them reads up to this many rows first.
NARROW_MAX = 20_000
# SearchEntities skips that probe when ANALYZE's statistics already put one of the principals on at least
# this many times the bound (decisions 66, 111): the probe would read the bound's rows to learn the same.
BROAD_FACTOR = 1.5
# Nearest chunks the HNSW branch gathers per wanted entity before grouping: an entity rarely has more
# than a few chunks near one query; when those still hold fewer than k entities the exact branch fills.
CHUNKS_PER_ENTITY = 3
HYBRID_CANDIDATES = 50
RRF_K = 60  # the constant of Cormack et al. (2009); damps the weight of the very first ranks
# The full-text side asks for the chunks holding at least m of the query's n distinct terms, m falling from n
# (decision 114). A step is tried only when its match query has at most this many AND-ed groups, C(n, m):
# every step for queries of up to six terms; longer ones try all terms, n - 1, ... while the groups stay
# few, then any term. Skipping a step never changes the results, it only ranks more chunks.
MAX_TERM_GROUPS = 20
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

    @classmethod
    def of_tokens(cls, tokens: Sequence[str]) -> Principal:
        """The principal holding exactly these ACL tokens (at most one ``user:``), e.g. a search token's."""
        users = [t for t in tokens if t.startswith("user:")]
        if len(users) > 1:
            raise ValueError("a principal is one user (and any groups)")
        return cls(user=users[0] if users else None, groups=tuple(t for t in tokens if not t.startswith("user:")))


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Optional narrowing; None = no filter. ``updated_*`` is the source's update time, [from, to)."""

    source_ids: tuple[int, ...] | None = None
    source_types: tuple[str, ...] | None = None
    statuses: tuple[str, ...] | None = None
    updated_from: datetime | None = None
    updated_to: datetime | None = None


@dataclass(frozen=True, slots=True)
class Segment:
    """A run of a highlight fragment's plain text; ``mark`` is true for a run matching the query."""

    text: str
    mark: bool


Fragment = tuple[Segment, ...]


@dataclass(frozen=True, slots=True)
class SearchResult:
    """One entity found, shown by its best chunk."""

    entity_id: int
    chunk_id: int  # the best chunk: nearest to the query (vector), best ranked (text)
    snippet: str  # that chunk as embedded: entity title, blank line, fragment
    title: str
    url: str | None
    natural_key: str | None
    source_id: int
    source_name: str
    source_type: str
    status: str
    updated_at: datetime | None
    score: float  # relevance in [0, 1], higher is better (module docstring)
    vector_distance: float | None = None  # cosine distance (0..2) of the best chunk; None: not found by vector
    text_rank: float | None = None  # ts_rank_cd of the best text-matching chunk; None: not found by text
    matched_by: tuple[str, ...] = field(default=("vector",))
    highlights: tuple[Fragment, ...] = ()


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
    """The k best entities ``principal`` may see for ``query``, best first."""
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
        fused = reciprocal_rank_fusion([vector, text], ["vector", "text"], k)
        return with_highlights(conn, query, fused)


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
    narrow_min: int = NARROW_MIN,
    narrow_max: int = NARROW_MAX,
    broad_factor: float = BROAD_FACTOR,
) -> list[SearchResult]:
    """SearchEntities after its transaction-local HNSW settings (call inside a transaction)."""
    candidates = k * CHUNKS_PER_ENTITY
    # pgvector caps hnsw.ef_search at 1000; the iterative scan goes on past it until `candidates` pass.
    sq.configure_vector_scan(
        conn, ef_search=min(MAX_EF_SEARCH, max(ef_search, candidates)), max_scan_tuples=max_scan_tuples
    )
    rows = sq.search_entities(
        conn,
        query_embedding=embedding,
        principals=tokens,
        model=model,
        k=k,
        candidates=candidates,
        narrow_share=narrow_share,
        narrow_min=narrow_min,
        narrow_max=narrow_max,
        broad_factor=broad_factor,
        **_filter_args(filters),
    )
    return [_result(r, score=1.0 - r.distance / 2, vector_distance=r.distance) for r in rows]


def text_search(
    conn: psycopg.Connection[Any], query: str, tokens: list[str], k: int, filters: SearchFilters
) -> list[SearchResult]:
    """SearchEntitiesText: full-text candidates under the same visibility rules, best first.

    Best first means: the chunk holding more of the query's distinct terms, then the higher cover density
    (``ts_rank_cd`` over any of them), decision 114. Ranking every chunk that holds any term cost 0.4-3.3 s
    at a million chunks for three words of rank 50-1,000 (bench/search_text.py); the k best are among the
    chunks holding all the terms, or all but one, ... whenever those hold k entities, so SearchEntitiesText
    is asked step by step (:func:`term_steps`) and the first step that yields k entities is the exact
    answer. Before the last step, the chunks holding a term 55, 21, 8, 3 and 2 times or more join those
    holding two terms (decisions 115, 116; the three highest sized first, and skipped when too small): a
    single word ranked every chunk holding it, at a million chunks p50 / p95 0.9 / 1.7 s for rank 50-200 and
    2.3 / 2.8 s for rank 5-50, now 11 / 36 and 100 / 646 ms. The last step (any term) is the whole set, so
    fewer than k results means fewer exist. Each match's visibility is read from entity_chunks_visibility_idx,
    not the chunk's row (decision 117): 0.62-0.75 of the p95 at a million chunks.

    ``score`` is ``rank / (1 + rank)``: ts_rank_cd is unbounded above, this keeps it in [0, 1). :func:`search`
    runs it after :func:`vector_search` in one transaction, so under ConfigureVectorScan's settings (custom
    plans, no parallel workers). Alone, without them, its p95 at 1 M chunks was 128 ms against 53 ms for
    the whole hybrid search (bench/search_million.py, stop 37).
    """
    terms = sq.text_query_terms(conn, query_text=query)
    steps = list(term_steps(terms))

    def run(step: TextStep) -> list[sq.SearchEntitiesTextRow]:
        return sq.search_entities_text(
            conn,
            terms=terms,
            match_query=None if step.repeats else step.query,
            repeat_query=step.query if step.repeats else None,
            principals=tokens,
            k=k,
            **_filter_args(filters),
        )

    rows = ranked_by_steps(steps, k, run, tier_sizes=lambda: _highest_tier_chunks(conn, steps))
    return [_result(r, score=r.rank / (1.0 + r.rank), text_rank=r.rank, matched_by=("text",)) for r in rows]


def ranked_by_steps(
    steps: Sequence[TextStep],
    k: int,
    run: Callable[[TextStep], list[sq.SearchEntitiesTextRow]],
    tier_sizes: Callable[[], dict[str, int]] | None = None,
) -> list[sq.SearchEntitiesTextRow]:
    """The k best rows of :func:`text_search`: ``run`` (SearchEntitiesText) asked for each of ``steps`` in
    turn (:func:`term_steps`) until one yields k entities, each repeats' step's rows merged with the two-term
    step's (:func:`with_repeats`). ``tier_sizes`` gives the chunks some repeats' steps match, by step query,
    and is asked once, at the first of them; a step too small to add the entities the two-term step lacks
    is skipped. That never changes the answer: each step is exact when it stops, and the last is the whole
    set. bench/search_text.py runs its older contenders through this loop too."""
    rows: list[sq.SearchEntitiesTextRow] = []
    reached: list[sq.SearchEntitiesTextRow] = []  # by the last step that matched the lexemes
    sizes: dict[str, int] | None = None
    for step in steps:
        if step.repeats and tier_sizes is not None:
            if sizes is None:
                sizes = tier_sizes()
            if len(reached) + sizes.get(step.query, k) < k:
                continue  # it cannot hold the entities the two-term step lacks: the same answer, one step less
        found = run(step)
        if step.repeats:
            # The two-term step held fewer than k entities, so all it reached: with the repeats' step, every
            # chunk ranking above a single term held fewer times than that step asks for.
            rows = with_repeats(reached, found, k)
        else:
            rows = reached = found
        if len(rows) >= k:
            break
    return rows


def _highest_tier_chunks(conn: psycopg.Connection[Any], steps: Sequence[TextStep]) -> dict[str, int]:
    """The chunks matched by each of the PROBED_TIERS highest repeats' ``steps``, by step query."""
    queries = [step.query for step in steps if step.repeats][:PROBED_TIERS]
    return dict(zip(queries, sq.repeat_tier_chunks(conn, queries=queries), strict=True))


@dataclass(frozen=True, slots=True)
class TextStep:
    """One step of :func:`text_search`: the chunks whose lexemes match ``query`` (a tsquery text), or with
    ``repeats`` those whose repeated lexemes (entity_chunk_repeats) match it, added to the two-term step."""

    query: str
    repeats: bool = False


# How entity_chunk_repeats marks a lexeme by the number of times its chunk holds it (sql/triggers/
# 310_chunk_lexemes.sql, decision 116): (at least, the mark appended), rising. Each threshold is about 2.6
# times the one below, so a common word meets a tier of some thousands of chunks, not one of most of the table.
REPEAT_MARKS = ((2, ""), (3, " 3"), (8, " 8"), (21, " 21"), (55, " 55"))
# The repeats' steps, falling: the chunks holding a term at least this many times.
REPEAT_TIERS = tuple(sorted((count for count, _ in REPEAT_MARKS), reverse=True))
# text_search asks for the sizes of this many of the highest tiers in one statement (RepeatTierChunks) and
# skips those too small: for most words they are empty, and three empty steps cost 0.7-1.8 ms p50 at 100 k
# chunks (bench/search_text.py). The lower tiers of a common word list most of the table, too long a read.
PROBED_TIERS = 3


def repeated(term: str, at_least: int) -> str:
    """The tsquery over entity_chunk_repeats matching the chunks that hold ``term`` (a quoted lexeme, as
    TextQueryTerms prints it) at least ``at_least`` times: an OR of its marked forms, so the index alone
    answers it."""
    if len(term) < 3 or term[0] != "'" or term[-1] != "'":
        raise ValueError(f"not a quoted tsquery lexeme: {term!r}")
    return " | ".join(f"{term[:-1]}{mark}'" for count, mark in REPEAT_MARKS if count >= at_least)


def term_steps(
    terms: Sequence[str],
    max_groups: int = MAX_TERM_GROUPS,
    tiers: Sequence[int] = REPEAT_TIERS,
    repeat: Callable[[str, int], str] = repeated,
) -> Iterator[TextStep]:
    """The steps of :func:`text_search`, each reaching a superset of the one before, the last every chunk
    holding any of ``terms``:

    - the chunks holding at least m of the terms, m falling from all to two (decision 114);
    - with those, the chunks holding one of the terms at least 55 times, then 21, 8, 3 and 2 (decisions
      115, 116). A chunk holding a single term t times ranks 0.1 t (ts_rank_cd over unweighted lexemes), so
      the chunks such a step does not reach rank below all it does;
    - any term.

    ``terms`` are tsquery operands as PostgreSQL prints them (TextQueryTerms), so joining them is safe.
    A step whose query would OR more than ``max_groups`` AND-ed groups is left out, and with the two-term
    step the repeats' steps (they add to it); the last never. ``tiers`` and ``repeat`` (a term and a tier
    to its tsquery) are the product's unless a bench compares another form of the repeats.
    """
    if not terms:
        return
    any_term = " | ".join(terms)
    for m in range(len(terms), 1, -1):
        if comb(len(terms), m) <= max_groups:
            yield TextStep(" | ".join("(" + " & ".join(group) + ")" for group in combinations(terms, m)))
    if comb(len(terms), 2) <= max_groups:  # 0 for one term: nothing to add to
        for at_least in tiers:
            yield TextStep(" | ".join(repeat(term, at_least) for term in terms), repeats=True)
    yield TextStep(any_term)


def with_repeats(
    before: Sequence[sq.SearchEntitiesTextRow], found: Sequence[sq.SearchEntitiesTextRow], k: int
) -> list[sq.SearchEntitiesTextRow]:
    """The k best of the two-term step's rows (``before``, fewer than k: every entity it reaches) and a
    repeats' step's rows (``found``), in SearchEntitiesText's order. An entity in both keeps its row from
    ``before``: that chunk holds two terms or more, so it ranks above every chunk holding one."""
    reached = {r.entity_id for r in before}
    rows = [*before, *(r for r in found if r.entity_id not in reached)]
    return sorted(rows, key=lambda r: (-r.matched, -r.rank, r.entity_id))[:k]


def _result(
    row: sq.SearchEntitiesRow | sq.SearchEntitiesTextRow,
    *,
    score: float,
    vector_distance: float | None = None,
    text_rank: float | None = None,
    matched_by: tuple[str, ...] = ("vector",),
) -> SearchResult:
    """The one place a query row becomes a SearchResult."""
    return SearchResult(
        entity_id=row.entity_id,
        chunk_id=row.chunk_id,
        snippet=row.body,
        title=row.title,
        url=row.url,
        natural_key=row.natural_key,
        source_id=row.source_id,
        source_name=row.source_name,
        source_type=row.source_type,
        status=row.status,
        updated_at=row.source_updated_at,
        score=score,
        vector_distance=vector_distance,
        text_rank=text_rank,
        matched_by=matched_by,
    )


def reciprocal_rank_fusion(
    lists: Sequence[Sequence[SearchResult]], names: Sequence[str], k: int, rrf_k: int = RRF_K
) -> list[SearchResult]:
    """Fuse ranked lists of entities: RRF(d) = sum over lists of 1 / (rrf_k + rank of d), rank from 1.

    ``score`` is RRF divided by its maximum, ``len(lists) / (rrf_k + 1)`` (first in every list), so it
    lies in (0, 1]. The snippet is the best chunk of the first list that holds the entity after the
    full-text list (its chunk holds the query's words, which the highlights show), else of the first.
    """
    best = len(lists) / (rrf_k + 1)
    rrf: dict[int, float] = {}
    shown: dict[int, SearchResult] = {}
    distance: dict[int, float] = {}
    rank_of: dict[int, float] = {}
    matched: dict[int, list[str]] = {}
    for results, name in zip(lists, names, strict=True):
        for rank, result in enumerate(results, start=1):
            eid = result.entity_id
            rrf[eid] = rrf.get(eid, 0.0) + 1.0 / (rrf_k + rank)
            if eid not in shown or result.text_rank is not None:
                shown[eid] = result
            matched.setdefault(eid, []).append(name)
            if result.vector_distance is not None:
                distance[eid] = result.vector_distance
            if result.text_rank is not None:
                rank_of[eid] = result.text_rank
    order = sorted(rrf, key=lambda eid: (-rrf[eid], eid))[:k]
    return [
        replace(
            shown[eid],
            score=rrf[eid] / best,
            vector_distance=distance.get(eid),
            text_rank=rank_of.get(eid),
            matched_by=tuple(matched[eid]),
        )
        for eid in order
    ]


def with_highlights(conn: psycopg.Connection[Any], query: str, results: list[SearchResult]) -> list[SearchResult]:
    """The results with the query's words marked in their snippets (HighlightChunks)."""
    if not results:
        return results
    rows = sq.highlight_chunks(conn, query_text=query, chunk_ids=[r.chunk_id for r in results])
    headlines = {r.chunk_id: r.headline for r in rows}
    return [replace(r, highlights=parse_headline(headlines.get(r.chunk_id, ""))) for r in results]


_START, _STOP, _FRAGMENT = "\x02", "\x03", "\x1e"


def parse_headline(headline: str) -> tuple[Fragment, ...]:
    """Split ts_headline's output (HighlightChunks' markers) into fragments of plain segments.

    Only fragments holding a match are kept: without one, ts_headline returns the text's opening words,
    which highlight nothing.
    """
    fragments: list[Fragment] = []
    for raw in headline.split(_FRAGMENT):
        segments: list[Segment] = []
        for n, part in enumerate(raw.split(_START)):
            text, stop, rest = part.partition(_STOP) if n else ("", "", part)
            if text:
                segments.append(Segment(text, True))
            if rest:
                segments.append(Segment(rest.replace(_STOP, ""), False))
            if not stop and text:  # an unterminated mark (cannot happen with ts_headline) stays plain
                segments[-1] = Segment(text, False)
        if any(s.mark for s in segments):
            fragments.append(tuple(segments))
    return tuple(fragments)


def _filter_args(filters: SearchFilters) -> dict[str, Any]:
    return {
        "source_ids": list(filters.source_ids) if filters.source_ids is not None else None,
        "source_types": list(filters.source_types) if filters.source_types is not None else None,
        "statuses": list(filters.statuses) if filters.statuses is not None else None,
        "updated_from": filters.updated_from,
        "updated_to": filters.updated_to,
    }
