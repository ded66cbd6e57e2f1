"""Search at a million chunks (issue 15 §3): HNSW build and size, recall and latency, filters, hybrid, halfvec.

A throw-away embedded PostgreSQL (temp data dir) migrated with the project's migrations. Every
product search goes through the code the app runs:

- ANN: ``app.vector.search.vector_search`` (ConfigureVectorScan + the generated SearchEntities, the one
  statement holding the ACL filter, the narrow-principal exact path and the short-result fallback);
- exact: the generated ``SearchEntitiesExact`` (same filters, no index): ground truth and baseline;
- hybrid: ``app.vector.search.search(hybrid=True)`` (SearchEntities for 50 candidates + SearchEntitiesText
  + reciprocal rank fusion) with an embedder that hands back the query's precomputed vector, so the
  time is the database's and the fusion's, not a model's;
- halfvec: NOT a product query. HALFVEC_RERANK below is a labelled copy of SearchEntities' ANN + ACL
  clause over an expression index on ``embedding::halfvec(384)``, taking ``--rerank-candidates`` rows
  and re-ranking them by the full-precision distance; it is what a halfvec storage switch would run.

Data: ``--chunks`` chunks (10 per entity) x 384 dims drawn from a Gaussian mixture of ``--clusters``
centres, unit-normalised (numpy), loaded by binary COPY with the HNSW, ACL and full-text indexes
dropped and then built once, each build timed. Entity ACLs hold ``group:all`` and, independently of the
clusters, ``group:p50`` / ``group:p10`` / ``group:p1`` with probability 0.5 / 0.1 / 0.01 (and ``group:p5``,
0.05, for ``--narrow-sweep``). Chunk bodies are words drawn from the chunk's cluster vocabulary, so the
full-text side of hybrid has something to rank. Queries are fresh draws around the same centres.

``--narrow-sweep SHARE:MIN:MAX:BROAD ...`` times every level through the product's ``vector_search`` with
that rule for who is served exactly (``narrow_share``, ``narrow_min``, ``narrow_max``, ``broad_factor``;
decision 111). The "text half" line times hybrid's full-text query alone, as ``search()`` runs it.

Output lines are flushed as they come, so a run cut short still leaves its numbers.

    python bench/search_million.py [--chunks 1000000] [--queries 100] [--clusters 2000] [--ef-search-sweep 200 400]
                                   [--narrow-sweep 0.02:0:20000:4 0.02:5000:20000:1.5] [--explain]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import numpy.typing as npt
import psycopg
from pgvector.psycopg import register_vector

from app.db.connect import connect
from app.queries import search as sq
from app.secrets import Keyring
from app.services.sources import NewSource, create_source
from app.vector.search import (
    BROAD_FACTOR,
    EF_SEARCH,
    HYBRID_CANDIDATES,
    NARROW_MAX,
    NARROW_MIN,
    NARROW_SHARE,
    Principal,
    SearchFilters,
    search,
    text_search,
    vector_search,
)
from app.vector.search import CHUNKS_PER_ENTITY as SEARCH_CHUNKS_PER_ENTITY
from app.vector.stage import vector_text
from bench._db import bench_database

MODEL = "bench-synthetic-384"
DIM = 384
CHUNKS_PER_ENTITY = 10
WORDS_PER_CHUNK = 12
LEVELS = (("50 %", "group:p50", 0.5, 0.95), ("10 %", "group:p10", 0.1, 0.95), ("1 %", "group:p1", 0.01, 0.90))
# One more level for the narrow-bound sweep (--narrow-sweep): at 1 M chunks, above the bound (2 %) but below
# what the statistics called broad before decision 111 (4 x the bound).
BETWEEN = ("5 %", "group:p5", 0.05, 0.95)
BETWEEN_SEED = 5

HALFVEC_INDEX = (
    "create index bench_halfvec_hnsw_idx on entity_chunks"
    " using hnsw ((embedding::halfvec(384)) halfvec_cosine_ops) with (m = 16, ef_construction = 64)"
)
# Labelled copy (not the product query) of SearchEntities' ANN + ACL clause over the halfvec expression
# index: `cand` nearest by half precision, then the k best entities of those by the stored full vector
# (each entity by its nearest chunk, as SearchEntities groups).
HALFVEC_RERANK = """
with ann as materialized (
    select c.id, c.entity_id, c.embedding
    from entity_chunks c
    where c.acl_principals && %(p)s::text[] and not c.entity_deleted and c.entity_status <> 'draft'
      and c.embedding_model = %(m)s
    order by c.embedding::halfvec(384) <=> %(q)s::halfvec(384)
    limit %(cand)s
)
select entity_id from (
    select distinct on (entity_id) entity_id, embedding <=> %(q)s::vector as d from ann order by entity_id, d
) best order by d, entity_id limit %(k)s
"""


def say(line: str) -> None:
    print(line, flush=True)


def clustered(
    rng: np.random.Generator, n: int, centres: npt.NDArray[np.float32], spread: float
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
    """n unit vectors around randomly picked centres, generated in blocks to bound peak memory."""
    picks = rng.integers(0, len(centres), n)
    out = np.empty((n, DIM), dtype=np.float32)
    for start in range(0, n, 100_000):
        block = picks[start : start + 100_000]
        points = centres[block] + rng.standard_normal((len(block), DIM), dtype=np.float32) * spread
        out[start : start + len(block)] = points / np.linalg.norm(points, axis=1, keepdims=True)
    return out, picks


def p95(values: Sequence[float]) -> float:
    return float(np.percentile(np.asarray(values), 95))


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - started


def relation_mib(conn: psycopg.Connection[Any], name: str, total: bool = False) -> float:
    fn = "pg_total_relation_size" if total else "pg_relation_size"
    row = conn.execute(f"select {fn}(%s::regclass)", (name,)).fetchone()
    assert row is not None
    return int(row[0]) / 2**20


def vocabulary(rng: np.random.Generator, clusters: int) -> npt.NDArray[np.int64]:
    """Each cluster's 20 words (ids into a 20,000-word lexicon), overlapping between clusters."""
    return rng.integers(0, 20_000, (clusters, 20))


def body_of(words: npt.NDArray[np.int64]) -> str:
    return " ".join(f"term{w}" for w in words)


class FixedEmbedder:
    """The Embedder protocol over precomputed query vectors: hybrid timing without a model."""

    model_name = MODEL
    dimension = DIM
    max_tokens = 256

    def __init__(self, table: dict[str, npt.NDArray[np.float32]]) -> None:
        self._table = table

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.stack([self._table[t] for t in texts])

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def load(
    conn: psycopg.Connection[Any],
    source_id: int,
    vectors: npt.NDArray[np.float32],
    picks: npt.NDArray[np.int64],
    vocab: npt.NDArray[np.int64],
    rng: np.random.Generator,
) -> tuple[float, dict[str, str]]:
    """Entities and chunks by binary COPY with the chunk indexes dropped; seconds, and each dropped
    index's definition (pg_get_indexdef) to build it again."""
    entities = len(vectors) // CHUNKS_PER_ENTITY
    with conn.cursor() as cur, cur.copy(
        "copy entities (source_id, source_type, source_entity_id, status, title, body, acl_principals, content_hash)"
        " from stdin"
    ) as copy:
        shares = rng.random((entities, len(LEVELS)))
        # Drawn apart, so that adding it left every other draw (and so every earlier figure's data) as it was.
        between = np.random.default_rng(BETWEEN_SEED).random(entities)
        for e in range(entities):
            acl = ["group:all"] + [LEVELS[i][1] for i in range(len(LEVELS)) if shares[e, i] < LEVELS[i][2]]
            acl += [BETWEEN[1]] if between[e] < BETWEEN[2] else []
            copy.write_row((source_id, "ticket", str(e), "final", f"Entity {e}", "", acl, f"h{e}"))
    ids = [int(r[0]) for r in conn.execute("select id from entities order by source_entity_id::int").fetchall()]
    # Bulk load first, build each index once after (what a first full load or a restore does), each from
    # the definition the migrations gave it, so the bench measures the index the product ships.
    definitions = {}
    # The lexemes' index is on entity_chunk_lexemes, which the COPY fills through its trigger (decision 113).
    for index in (
        "entity_chunks_embedding_hnsw_idx", "entity_chunks_acl_principals_idx", "entity_chunk_lexemes_lexemes_idx"
    ):
        row = conn.execute("select pg_get_indexdef(%s::regclass)", (index,)).fetchone()
        assert row is not None
        definitions[index] = str(row[0])
        conn.execute(f"drop index {index}")
    conn.commit()
    word_picks = rng.integers(0, vocab.shape[1], (len(vectors), WORDS_PER_CHUNK))
    started = time.perf_counter()
    with conn.cursor() as cur, cur.copy(
        "copy entity_chunks (entity_id, ordinal, body, content_hash, embedding, embedding_model)"
        " from stdin with (format binary)"
    ) as copy:
        copy.set_types(["int8", "int4", "text", "text", "vector", "text"])
        for n, vector in enumerate(vectors):
            body = body_of(vocab[picks[n], word_picks[n]])
            copy.write_row((ids[n // CHUNKS_PER_ENTITY], n % CHUNKS_PER_ENTITY, body, f"c{n}", vector, MODEL))
    conn.commit()
    return time.perf_counter() - started, definitions


def narrow_rule(text: str) -> tuple[float, int, int, float]:
    """``SHARE:MIN:MAX:BROAD`` -> (narrow_share, narrow_min, narrow_max, broad_factor)."""
    parts = text.split(":")
    try:
        if len(parts) != 4:
            raise ValueError
        return float(parts[0]), int(parts[1]), int(parts[2]), float(parts[3])
    except ValueError:
        raise ValueError(f"{text!r} is not SHARE:MIN:MAX:BROAD (e.g. 0.02:5000:20000:1.5)") from None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--ef-search", type=int, default=EF_SEARCH, help="the product's (app.vector.search.EF_SEARCH)")
    parser.add_argument(
        "--ef-search-sweep", type=int, nargs="*", default=[100, 400],
        help="further ef_search values for the unfiltered recall/latency trade-off",
    )
    parser.add_argument("--clusters", type=int, default=2000)
    parser.add_argument(
        "--spread", type=float, default=0.03, help="per-dimension noise around a unit centre (0.03: noise norm 0.6)"
    )
    parser.add_argument("--rerank-candidates", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--shared-buffers", default="6GB")
    parser.add_argument("--maintenance-work-mem", default="6GB")
    parser.add_argument(
        "--narrow-sweep", nargs="*", default=[], metavar="SHARE:MIN:MAX:BROAD",
        help="further (narrow_share, narrow_min, narrow_max, broad_factor) for who is served exactly "
        "(app.vector.search): each level timed through the product",
    )
    parser.add_argument("--no-halfvec", action="store_true")
    parser.add_argument(
        "--explain", action="store_true",
        help="print the EXPLAIN (ANALYZE, BUFFERS) of SearchEntities and of SearchEntitiesText",
    )
    parser.add_argument(
        "--hnsw-with", metavar="PARAMS",
        help="build the HNSW index with these storage parameters instead of the migrations' "
             "(e.g. 'm = 16, ef_construction = 128')",
    )
    args = parser.parse_args()
    try:
        rules = [(text, narrow_rule(text)) for text in args.narrow_sweep]
    except ValueError as exc:
        parser.error(f"--narrow-sweep: {exc}")
    rng = np.random.default_rng(args.seed)
    k = args.k
    say(f"load average at start {os.getloadavg()[0]:.2f} / {os.getloadavg()[1]:.2f} / {os.getloadavg()[2]:.2f}")

    try:
        with bench_database(shared_buffers=args.shared_buffers) as url, connect(url) as conn:
            register_vector(conn)
            conn.execute(f"set maintenance_work_mem = '{args.maintenance_work_mem}'")
            conn.execute("set max_parallel_maintenance_workers = 1")  # 2 shared cores: leader + 1 worker
            source_id = create_source(
                conn, Keyring(current=os.urandom(32)),
                NewSource(name="bench", connector_type="jira", base_url="http://127.0.0.1:9", credential="x"),
            )
            conn.commit()
            centres = rng.standard_normal((args.clusters, DIM)).astype(np.float32)
            centres /= np.linalg.norm(centres, axis=1, keepdims=True)
            (vectors, picks), gen_s = timed(lambda: clustered(rng, args.chunks, centres, args.spread))
            queries, qpicks = clustered(rng, args.queries + args.warmup, centres, args.spread)
            vocab = vocabulary(rng, args.clusters)
            copy_s, definitions = load(conn, source_id, vectors, picks, vocab, rng)
            vector_index = definitions["entity_chunks_embedding_hnsw_idx"]
            if args.hnsw_with:
                vector_index = re.sub(r"WITH \(.*\)$", f"WITH ({args.hnsw_with})", vector_index)
            say(f"hnsw index  {vector_index}")
            del vectors
            say(f"data        {args.chunks} chunks x {DIM} dims, {args.clusters} clusters, spread {args.spread}; "
                f"generated {gen_s:.1f}s, COPY {copy_s:.1f}s")
            builds = {}
            for name, ddl in (
                ("hnsw vector", vector_index),
                ("gin acl", definitions["entity_chunks_acl_principals_idx"]),
                ("gin fts", definitions["entity_chunk_lexemes_lexemes_idx"]),
            ):
                load_before = os.getloadavg()[0]
                _, builds[name] = timed(lambda ddl=ddl: conn.execute(ddl))  # type: ignore[misc]
                conn.commit()
                say(f"build       {name:12} {builds[name]:7.1f}s (load average {load_before:.2f} -> "
                    f"{os.getloadavg()[0]:.2f})")
            conn.execute("analyze entities")
            conn.execute("analyze entity_chunks")
            conn.commit()
            say(f"sizes       heap entity_chunks {relation_mib(conn, 'entity_chunks'):.0f} MiB, "
                f"hnsw {relation_mib(conn, 'entity_chunks_embedding_hnsw_idx'):.0f} MiB, "
                f"gin acl {relation_mib(conn, 'entity_chunks_acl_principals_idx'):.0f} MiB, "
                f"gin fts {relation_mib(conn, 'entity_chunk_lexemes_lexemes_idx'):.0f} MiB, "
                f"total {relation_mib(conn, 'entity_chunks', total=True):.0f} MiB")
            conn.commit()
            say(f"settings    shared_buffers {args.shared_buffers}, ef_search {args.ef_search}, k {k}, "
                f"{args.queries} timed queries after {args.warmup} warm-up")
            texts = [vector_text(q) for q in queries]
            warm, timed_texts = texts[: args.warmup], texts[args.warmup :]

            def ann(text: str, principal: str) -> list[int]:
                with conn.transaction():
                    rows = vector_search(conn, text, MODEL, [principal], k, SearchFilters(), ef_search=args.ef_search)
                return [r.entity_id for r in rows]

            def exact(text: str, principal: str) -> list[int]:
                with conn.transaction():
                    rows = sq.search_entities_exact(
                        conn, query_embedding=text, principals=[principal], model=MODEL, k=k
                    )
                return [r.entity_id for r in rows]

            def run(fn: Callable[[str, str], list[int]], principal: str) -> tuple[list[list[int]], list[float]]:
                for text in warm:
                    fn(text, principal)
                results, seconds = [], []
                for text in timed_texts:
                    ids, s = timed(lambda text=text: fn(text, principal))  # type: ignore[misc]
                    results.append(ids)
                    seconds.append(s)
                return results, seconds

            def recall(got: list[list[int]], truth: list[list[int]]) -> float:
                return statistics.mean(len(set(g) & set(t)) / max(1, len(t)) for g, t in zip(got, truth, strict=True))

            if args.explain:
                for principal in ("group:all", "group:p50"):
                    with conn.transaction():
                        sq.configure_vector_scan(conn, ef_search=args.ef_search, max_scan_tuples=20_000)
                        explained = conn.execute(
                            "explain (analyze, buffers) " + sq.SEARCH_ENTITIES,
                            {"query_embedding": texts[0], "principals": [principal], "model": MODEL, "k": k,
                             "narrow_share": NARROW_SHARE, "narrow_min": NARROW_MIN, "narrow_max": NARROW_MAX,
                             "broad_factor": BROAD_FACTOR, "source_ids": None, "statuses": None, "source_types": None,
                             "updated_from": None, "updated_to": None, "candidates": k * SEARCH_CHUNKS_PER_ENTITY},
                        ).fetchall()
                    say(f"explain     SearchEntities as {principal}:\n" + "\n".join(str(r[0]) for r in explained))
                # The full-text half of hybrid, for three words of the first query's cluster (no draw from
                # rng: the timed queries stay the same with and without --explain).
                with conn.transaction():
                    sq.configure_vector_scan(conn, ef_search=args.ef_search, max_scan_tuples=20_000)
                    explained = conn.execute(
                        "explain (analyze, buffers) " + sq.SEARCH_ENTITIES_TEXT,
                        {"query_text": body_of(vocab[qpicks[0], :3]), "principals": ["group:all"], "k": 50,
                         "source_ids": None, "statuses": None, "source_types": None, "updated_from": None,
                         "updated_to": None},
                    ).fetchall()
                say("explain     SearchEntitiesText as group:all:\n" + "\n".join(str(r[0]) for r in explained))
            # The index pages into the buffer cache before anything is timed, as in a warm server.
            conn.execute("create extension if not exists pg_prewarm")
            conn.execute("select pg_prewarm('entity_chunks_embedding_hnsw_idx')")
            conn.execute("select pg_prewarm('entity_chunks')")
            conn.commit()
            ann_all, ann_all_s = run(ann, "group:all")
            exact_all, exact_all_s = run(exact, "group:all")
            truths = {"group:all": exact_all}  # each principal's exact answers, taken once (an exact scan is slow)
            base_p95 = p95(ann_all_s)
            r = recall(ann_all, exact_all)
            ratio = base_p95 / p95(exact_all_s)
            say(f"unfiltered  recall@{k} {r:.3f} (>= 0.95 {'ok' if r >= 0.95 else 'MISS'}); "
                f"p95 ANN {base_p95 * 1000:.2f} ms, exact {p95(exact_all_s) * 1000:.1f} ms, "
                f"ratio {ratio:.4f} (<= 0.02 {'ok' if ratio <= 0.02 else 'MISS'})")
            for ef in args.ef_search_sweep:
                def ann_ef(text: str, principal: str, ef: int = ef) -> list[int]:
                    with conn.transaction():
                        rows = vector_search(conn, text, MODEL, [principal], k, SearchFilters(), ef_search=ef)
                    return [r.entity_id for r in rows]

                got, got_s = run(ann_ef, "group:all")
                r = recall(got, exact_all)
                say(f"ef_search {ef:<4} recall@{k} {r:.3f} (>= 0.95 {'ok' if r >= 0.95 else 'MISS'}); "
                    f"p95 ANN {p95(got_s) * 1000:.2f} ms, ratio to exact {p95(got_s) / p95(exact_all_s):.4f}")
            for label, token, _, target in LEVELS:
                truth, truth_s = run(exact, token)
                truths[token] = truth
                # The product's ef_search first, then each swept value against the same ground truth.
                for ef in (args.ef_search, *args.ef_search_sweep):
                    def ann_level(text: str, principal: str, ef: int = ef) -> list[int]:
                        with conn.transaction():
                            rows = vector_search(conn, text, MODEL, [principal], k, SearchFilters(), ef_search=ef)
                        return [r.entity_id for r in rows]

                    got, got_s = run(ann_level, token)
                    r = recall(got, truth)
                    # always k, or every visible entity when fewer than k exist (the exact answer's length)
                    full = all(len(g) == len(t) for g, t in zip(got, truth, strict=True))
                    say(f"{label:>5} vis   ef_search {ef:<4} recall@{k} {r:.3f} "
                        f"(>= {target} {'ok' if r >= target else 'MISS'}); "
                        f"p95 {p95(got_s) * 1000:.2f} ms = {p95(got_s) / base_p95:.2f}x unfiltered; "
                        f"exact p95 {p95(truth_s) * 1000:.1f} ms; always {k}: {'yes' if full else 'NO'}")

            # Who is served exactly: a principal seeing fewer than max(20 k, min(max(share x chunks, min), max)).
            for triple, (share, least, most, broad) in rules:
                levels = (*LEVELS[:2], BETWEEN, *LEVELS[2:])
                for label, token, target in (("all", "group:all", 0.95), *((n, t, g) for n, t, _, g in levels)):
                    def ann_share(
                        text: str, principal: str, share: float = share, least: int = least, most: int = most,
                        broad: float = broad,
                    ) -> list[int]:
                        with conn.transaction():
                            rows = vector_search(conn, text, MODEL, [principal], k, SearchFilters(),
                                                 ef_search=args.ef_search, narrow_share=share, narrow_min=least,
                                                 narrow_max=most, broad_factor=broad)
                        return [r.entity_id for r in rows]

                    if token not in truths:
                        truths[token] = run(exact, token)[0]
                    got, got_s = run(ann_share, token)
                    r = recall(got, truths[token])
                    say(f"narrow {triple:<20} {label:>5} vis  recall@{k} {r:.3f} (>= {target} "
                        f"{'ok' if r >= target else 'MISS'}); p95 {p95(got_s) * 1000:.2f} ms")

            words = [body_of(vocab[qpicks[i], rng.integers(0, vocab.shape[1], 3)]) for i in range(len(texts))]
            embedder = FixedEmbedder({w: queries[i] for i, w in enumerate(words)})
            everyone = Principal(user=None, groups=("group:all",))

            def hybrid(words_text: str) -> int:
                with conn.transaction():
                    return len(search(conn, embedder, query=words_text, principal=everyone, k=k, hybrid=True))

            for w in words[: args.warmup]:
                hybrid(w)
            hybrid_s = [timed(lambda w=w: hybrid(w))[1] for w in words[args.warmup :]]  # type: ignore[misc]
            say(f"hybrid      p95 {p95(hybrid_s) * 1000:.2f} ms (search(hybrid=True): SearchEntities k=50 + "
                f"SearchEntitiesText k=50 + RRF), {p95(hybrid_s) / base_p95:.2f}x vector-only p95")

            def text_half(words_text: str) -> int:
                # As search() runs it: after ConfigureVectorScan's transaction-local settings (custom plans,
                # no parallel workers), in the same transaction.
                with conn.transaction():
                    sq.configure_vector_scan(conn, ef_search=args.ef_search, max_scan_tuples=20_000)
                    return len(text_search(conn, words_text, ["group:all"], HYBRID_CANDIDATES, SearchFilters()))

            text_s = [timed(lambda w=w: text_half(w))[1] for w in words[args.warmup :]]  # type: ignore[misc]
            say(f"text half   p95 {p95(text_s) * 1000:.2f} ms (SearchEntitiesText k={HYBRID_CANDIDATES}, the same "
                f"words), {p95(text_s) / p95(hybrid_s):.2f}x hybrid p95")
            if args.no_halfvec:
                return

            load_before = os.getloadavg()[0]
            _, build_half_s = timed(lambda: conn.execute(HALFVEC_INDEX))
            conn.execute("analyze entity_chunks")
            conn.execute("select pg_prewarm('bench_halfvec_hnsw_idx')")
            conn.commit()
            say(f"build       hnsw halfvec {build_half_s:7.1f}s (load average {load_before:.2f} -> "
                f"{os.getloadavg()[0]:.2f})")

            def half(cand: int) -> Callable[[str, str], list[int]]:
                def go(text: str, principal: str) -> list[int]:
                    with conn.transaction():
                        sq.configure_vector_scan(conn, ef_search=max(args.ef_search, cand), max_scan_tuples=20_000)
                        rows = conn.execute(
                            HALFVEC_RERANK, {"q": text, "p": [principal], "m": MODEL, "k": k, "cand": cand}
                        ).fetchall()
                    return [cast(int, row[0]) for row in rows]
                return go

            plan = "\n".join(str(row[0]) for row in conn.execute(
                "explain " + HALFVEC_RERANK,
                {"q": texts[0], "p": ["group:all"], "m": MODEL, "k": k, "cand": args.rerank_candidates},
            ).fetchall())
            conn.commit()
            uses = "bench_halfvec_hnsw_idx" in plan
            say(f"vector  idx build {builds['hnsw vector']:7.1f}s, size "
                f"{relation_mib(conn, 'entity_chunks_embedding_hnsw_idx'):6.0f} MiB, "
                f"recall@{k} {recall(ann_all, exact_all):.3f}, p95 {base_p95 * 1000:.2f} ms")
            conn.commit()
            size_half = relation_mib(conn, "bench_halfvec_hnsw_idx")
            conn.commit()
            for cand in sorted({k, args.rerank_candidates}):
                got, got_s = run(half(cand), "group:all")
                say(f"halfvec idx build {build_half_s:7.1f}s, size {size_half:6.0f} MiB, "
                    f"recall@{k} {recall(got, exact_all):.3f}, p95 {p95(got_s) * 1000:.2f} ms "
                    f"({cand} candidates re-ranked by the full vector)"
                    f"{'' if uses else '  (WARNING: plan did not use the halfvec index)'}")
            got, got_s = run(half(args.rerank_candidates), "group:p10")
            truth, _ = run(exact, "group:p10")
            say(f"halfvec 10 % vis recall@{k} {recall(got, truth):.3f}, p95 {p95(got_s) * 1000:.2f} ms "
                f"({args.rerank_candidates} candidates)")
    finally:
        say(f"load average at end {os.getloadavg()[0]:.2f} / {os.getloadavg()[1]:.2f} / {os.getloadavg()[2]:.2f}")


if __name__ == "__main__":
    main()
