"""With 1 % of chunks visible, search still returns k when k visible chunks exist (issue 5, tests)."""

from __future__ import annotations

from typing import Any

import psycopg

from app.queries import search as sq
from app.secrets import Keyring
from app.vector.search import (
    BROAD_FACTOR,
    CHUNKS_PER_ENTITY,
    NARROW_MAX,
    NARROW_MIN,
    NARROW_SHARE,
    Principal,
    SearchFilters,
    search,
    vector_search,
)
from app.vector.stage import VectorStage, vector_text
from tests.vector.conftest import entity, load_entities, plain_source
from tests.vector.fakes import HashEmbedder

ENTITIES = 4000
RARE = "group:jira:rare"  # 1 % of the chunks
TENTH = "group:jira:tenth"  # 10 % of the chunks


def _corpus(conn: psycopg.Connection[Any], keyring: Keyring) -> tuple[HashEmbedder, set[int]]:
    source_id = plain_source(conn, keyring)
    embedder = HashEmbedder()
    batch = [
        entity(
            n,
            f"paragraph {n} about billing",
            ["group:jira:all", *([RARE] if n % 100 == 7 else []), *([TENTH] if n % 10 == 3 else [])],
        )
        for n in range(ENTITIES)
    ]
    load_entities(conn, source_id, batch, VectorStage(embedder))
    conn.execute("analyze entity_chunks")
    rare = {r[0] for r in conn.execute("select id from entity_chunks where %s = any(acl_principals)", (RARE,))}
    conn.commit()
    assert len(rare) == ENTITIES // 100
    return embedder, rare


# The corpus is 4,000 chunks, below NARROW_MIN: the tests of the HNSW branch and of the probe's skip pass
# narrow_min 0, so that the 2 % share decides as it does on a big table.
AS_IF_BIG = 0


def _search_params(
    query: str, principal: str, model: str, narrow_min: int = NARROW_MIN, broad_factor: float = BROAD_FACTOR
) -> dict[str, object]:
    """SearchEntities' parameters as vector_search passes them for k = 10 and no filters, for EXPLAIN."""
    return {
        "query_embedding": query, "principals": [principal], "model": model, "k": 10,
        "candidates": 10 * CHUNKS_PER_ENTITY, "narrow_share": NARROW_SHARE, "narrow_min": narrow_min,
        "narrow_max": NARROW_MAX, "broad_factor": broad_factor, "source_ids": None, "statuses": None,
        "source_types": None, "updated_from": None, "updated_to": None,
    }  # fmt: skip


def test_one_percent_visibility_still_fills_k(conn: psycopg.Connection[Any], keyring: Keyring) -> None:
    embedder, rare = _corpus(conn, keyring)
    for n in range(20):
        results = search(conn, embedder, query=f"query {n}", principal=Principal(None, (RARE,)), k=10)
        assert len(results) == 10
        assert {r.chunk_id for r in results} <= rare
        assert len({r.entity_id for r in results}) == 10
        distances = [r.vector_distance for r in results]
        assert None not in distances and distances == sorted(distances)  # type: ignore[type-var]
    # Fewer visible than k: all of them, not fewer.
    assert len(search(conn, embedder, query="x", principal=Principal(None, (RARE,)), k=60)) == len(rare)


def test_hnsw_iterative_scan_fills_k_where_a_plain_scan_would_not(
    conn: psycopg.Connection[Any], keyring: Keyring
) -> None:
    """At 10 % visibility the HNSW branch runs; with ef_search 40 a plain scan would yield ~4 visible
    chunks, the iterative scan goes on until it has k."""
    embedder, _ = _corpus(conn, keyring)
    tenth = {r[0] for r in conn.execute("select id from entity_chunks where %s = any(acl_principals)", (TENTH,))}
    conn.commit()
    query = vector_text(embedder.embed(["a question"])[0])
    with conn.transaction():
        # A 4,000-row table would otherwise be sorted whole, or its 400 visible rows read through the ACL index
        # and sorted: at this size both are cheaper than the HNSW scan this test is about.
        conn.execute("set local enable_seqscan = off")
        conn.execute("set local enable_bitmapscan = off")
        sq.configure_vector_scan(conn, ef_search=40, max_scan_tuples=20_000)
        plan = "\n".join(
            r[0]
            for r in conn.execute(
                "explain (analyze) " + sq.SEARCH_ENTITIES,
                _search_params(query, TENTH, embedder.model_name, narrow_min=AS_IF_BIG),
            )
        )
        hnsw = next(line for line in plan.splitlines() if "Index Scan using entity_chunks_embedding_hnsw_idx" in line)
        assert "never executed" not in hnsw and f"rows={10 * CHUNKS_PER_ENTITY}" in hnsw
        assert "One-Time Filter" in plan  # the exact branch is gated off
        results = vector_search(
            conn, query, embedder.model_name, [TENTH], 10, SearchFilters(), ef_search=40, narrow_min=AS_IF_BIG
        )
    assert len(results) == 10 and {r.chunk_id for r in results} <= tenth


def test_a_narrow_principal_is_served_by_an_exact_sort_of_its_visible_chunks(
    conn: psycopg.Connection[Any], keyring: Keyring
) -> None:
    embedder, rare = _corpus(conn, keyring)
    found, truth = _search_and_truth(conn, embedder, "a question", RARE)
    assert found == truth and set(found) <= rare


def test_a_principal_on_fewer_than_narrow_min_chunks_is_served_exactly_however_small_the_table(
    conn: psycopg.Connection[Any], keyring: Keyring
) -> None:
    """TENTH sees 400 of 4,000 chunks: 10 %, five times the 2 % share, but fewer than NARROW_MIN. The probe
    counts them and the exact branch ranks them; the HNSW scan never runs. With the floor at 0 it does."""
    embedder, _ = _corpus(conn, keyring)
    query = vector_text(embedder.embed(["a question"])[0])

    def branches(narrow_min: int) -> tuple[bool, bool]:
        """Whether the `ann` and the `exact` branch read entity_chunks."""
        with conn.transaction():
            sq.configure_vector_scan(conn, ef_search=100, max_scan_tuples=20_000)
            params = _search_params(query, TENTH, embedder.model_name, narrow_min=narrow_min)
            plan = [r[0] for r in conn.execute("explain (analyze) " + sq.SEARCH_ENTITIES, params)]
        return _cte_scanned(plan, "ann_chunks"), _cte_scanned(plan, "exact")

    assert branches(NARROW_MIN) == (False, True)
    assert branches(AS_IF_BIG) == (True, False)
    found, truth = _search_and_truth(conn, embedder, "a question", TENTH)
    assert found == truth and len(found) == 10


def test_exact_branch_fills_k_when_the_index_scan_runs_out_of_budget(
    conn: psycopg.Connection[Any], keyring: Keyring
) -> None:
    embedder, _ = _corpus(conn, keyring)
    # 20 index tuples hold ~2 visible chunks: the HNSW branch comes back short, the exact one fills.
    found, truth = _search_and_truth(
        conn, embedder, "another question", TENTH, no_seqscan=True, max_scan_tuples=20, narrow_min=AS_IF_BIG
    )
    assert found == truth


def _search_and_truth(
    conn: psycopg.Connection[Any],
    embedder: HashEmbedder,
    text: str,
    principal: str,
    *,
    no_seqscan: bool = False,
    **search_options: int,
) -> tuple[list[int], list[int]]:
    """The chunk ids ``vector_search`` returns for ``principal`` at k = 10, and the exact top 10 (an
    ORDER BY over every visible chunk), in one transaction (``no_seqscan``: the planner must use indexes)."""
    query = vector_text(embedder.embed([text])[0])
    with conn.transaction():
        if no_seqscan:
            conn.execute("set local enable_seqscan = off")
        results = vector_search(conn, query, embedder.model_name, [principal], 10, SearchFilters(), **search_options)
        truth = sq.search_entities_exact(
            conn, query_embedding=query, principals=[principal], model=embedder.model_name, k=10
        )
    return [r.chunk_id for r in results], [t.chunk_id for t in truth]


def _probe_scanned(
    conn: psycopg.Connection[Any], query: str, principal: str, model: str, broad_factor: float = BROAD_FACTOR
) -> bool:
    """Whether SearchEntities' `probe` read entity_chunks for ``principal`` (EXPLAIN ANALYZE), the bound
    as on a big table (AS_IF_BIG)."""
    sq.configure_vector_scan(conn, ef_search=100, max_scan_tuples=20_000)
    params = _search_params(query, principal, model, narrow_min=AS_IF_BIG, broad_factor=broad_factor)
    return _cte_scanned([r[0] for r in conn.execute("explain (analyze) " + sq.SEARCH_ENTITIES, params)], "probe")


def _cte_scanned(plan: list[str], cte: str) -> bool:
    """Whether the CTE ``cte`` of an EXPLAIN ANALYZE plan read entity_chunks."""
    start = next(i for i, line in enumerate(plan) if line.lstrip().startswith(f"CTE {cte}"))
    depth = len(plan[start]) - len(plan[start].lstrip())
    end = next(i for i in range(start + 1, len(plan)) if len(plan[i]) - len(plan[i].lstrip()) <= depth)
    scan = next(line for line in plan[start:end] if "on entity_chunks" in line)
    return "never executed" not in scan


def test_the_probe_is_skipped_for_a_principal_the_statistics_show_on_most_chunks(
    conn: psycopg.Connection[Any], keyring: Keyring
) -> None:
    embedder, rare = _corpus(conn, keyring)
    query = vector_text(embedder.embed(["a question"])[0])
    with conn.transaction():
        assert not _probe_scanned(conn, query, "group:jira:all", embedder.model_name)  # on every chunk
        # 400 chunks against a bound of 200 (20 x k): broad at BROAD_FACTOR 1.5, counted at decision 66's 4.
        assert not _probe_scanned(conn, query, TENTH, embedder.model_name)
        assert _probe_scanned(conn, query, TENTH, embedder.model_name, broad_factor=4.0)
        assert _probe_scanned(conn, query, RARE, embedder.model_name)  # 40 chunks
        broad = vector_search(
            conn, query, embedder.model_name, ["group:jira:all"], 10, SearchFilters(), narrow_min=AS_IF_BIG
        )
        narrow = vector_search(conn, query, embedder.model_name, [RARE], 10, SearchFilters())
    assert len({r.entity_id for r in broad}) == 10
    assert len(narrow) == 10 and {r.chunk_id for r in narrow} <= rare


def test_stale_statistics_never_show_a_chunk_the_principal_lost(
    conn: psycopg.Connection[Any], keyring: Keyring
) -> None:
    """ANALYZE saw the principal on every chunk; then it lost all but 30 entities. The statistics still call
    it broad, so the probe is skipped and the HNSW branch runs: it still returns only those 30 entities' chunks,
    and k of them."""
    embedder, _ = _corpus(conn, keyring)
    kept = [r[0] for r in conn.execute("select id from entities order by id limit 30")]
    # The chunks follow their entities' ACL (trigger _300_propagate_acl); no ANALYZE after this.
    conn.execute("update entities set acl_principals = array['group:jira:other'] where not (id = any(%s))", (kept,))
    keep = [r[0] for r in conn.execute("select id from entity_chunks where entity_id = any(%s)", (kept,))]
    conn.commit()
    query = vector_text(embedder.embed(["a question"])[0])
    with conn.transaction():
        assert not _probe_scanned(conn, query, "group:jira:all", embedder.model_name)
        results = vector_search(
            conn, query, embedder.model_name, ["group:jira:all"], 10, SearchFilters(), narrow_min=AS_IF_BIG
        )
        truth = sq.search_entities_exact(
            conn, query_embedding=query, principals=["group:jira:all"], model=embedder.model_name, k=10
        )
    assert len(results) == 10 and {r.chunk_id for r in results} <= set(keep)
    assert {r.chunk_id for r in truth} <= set(keep)
