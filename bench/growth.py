"""How each cost grows with the work (issue 15 §5): the same measurements at several source sizes.

For each ``--sizes`` value N, a Jira emulator of N issues (its own process) and a fresh migrated
database on the embedded server (bench/_db.py); then, in order:

1. full sync: ``harvester sync <source> --mode full`` in its own process, wall time and peak RSS
   (psutil, sampled every 0.1 s), no embedding stage (HARVESTER_EMBEDDER=none: this measures the
   pipeline, the model's cost is per chunk and linear, see docs/performance.md);
2. no-op re-sync: the same command with ``--mode incremental`` and nothing changed at the source;
3. sizes: ``pg_table_size`` and ``pg_indexes_size`` of each content table (entities, entity_edges,
   entity_refs, entity_chunks);
4. search p95: ``--chunks-per-entity`` synthetic 384-d clustered chunks per entity (binary COPY, the
   chunks inherit each entity's real ACL through the trigger), one HNSW build from the migrations'
   own definition of the index, then ``app.vector.search.vector_search`` (the product's SearchEntities) for
   the most common ACL token;
5. the vector index's price on the write path: ``--insert-chunks`` more chunks written through the
   product's UpsertChunks in transactions of 100 (a page's worth), once before the HNSW build and once
   after it, at the same table size (the first batch is deleted before the build): the PostgreSQL
   backend's CPU per chunk each time, and their difference, which is what one HNSW insert costs at
   that graph size.

Prints one row per size and the log-log slope between consecutive sizes (d log cost / d log N:
1 = linear, 0 = flat).

    python bench/growth.py [--sizes 10000 100000] [--chunks-per-entity 1] [--queries 100] [--insert-chunks 2000]
                           [--hnsw-with 'm = 16, ef_construction = 64']
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import psutil
import psycopg
from pgvector.psycopg import register_vector

from app.db.connect import connect
from app.queries import chunks as cq
from app.vector.search import SearchFilters, vector_search
from app.vector.stage import vector_text
from bench._db import bench_database
from bench._emulator import jira_emulator

MB = 1024 * 1024
DIM = 384
MODEL = "bench-synthetic-384"
TABLES = ("entities", "entity_edges", "entity_refs", "entity_chunks")


@dataclass(frozen=True)
class Row:
    size: int
    entities: int
    full_s: float
    noop_s: float
    peak_rss_mb: float
    table_mb: dict[str, float]
    index_mb: dict[str, float]
    chunks: int
    hnsw_build_s: float
    search_p95_ms: float
    insert_plain_ms: float  # backend CPU per chunk written through UpsertChunks, no HNSW index
    insert_hnsw_ms: float  # the same, with the index


def sync(env: dict[str, str], mode: str) -> tuple[float, float]:
    """Wall time and peak RSS (MB) of one `harvester sync` process."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "sync", "bench", "--mode", mode],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    ps = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        try:
            peak = max(peak, ps.memory_info().rss)
        except psutil.NoSuchProcess:
            break
        time.sleep(0.1)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        assert proc.stderr is not None
        raise RuntimeError(f"sync --mode {mode} exited {proc.returncode}: {proc.stderr.read()[-2000:]!r}")
    return elapsed, peak / MB


def backend_cpu(conn: psycopg.Connection[Any]) -> float:
    """CPU seconds the server process behind ``conn`` has spent (the embedded server is on this host)."""
    row = conn.execute("select pg_backend_pid()").fetchone()
    assert row is not None
    times = psutil.Process(int(row[0])).cpu_times()
    return float(times.user + times.system)


def insert_cost(conn: psycopg.Connection[Any], rows: list[dict[str, Any]]) -> float:
    """Backend CPU milliseconds per chunk for writing ``rows`` through UpsertChunks, 100 a transaction
    (a page's worth, as a sync writes them); the rows are deleted again afterwards."""
    before = backend_cpu(conn)
    for start in range(0, len(rows), 100):
        with conn.transaction():
            written = cq.upsert_chunks(conn, rows=rows[start : start + 100])
        assert written == len(rows[start : start + 100]), f"UpsertChunks wrote {written} rows"
    spent = backend_cpu(conn) - before
    conn.execute(
        "delete from entity_chunks where (entity_id, ordinal) in (select * from unnest(%s::bigint[], %s::int[]))",
        ([r["entity_id"] for r in rows], [r["ordinal"] for r in rows]),
    )
    return spent * 1000 / len(rows)


def search_p95(
    conn: psycopg.Connection[Any], chunks_per_entity: int, queries: int, inserts: int, hnsw_with: str | None
) -> tuple[int, float, float, float, float]:
    """Synthetic chunks for every entity, one HNSW build, p95 of the product's vector search, and the
    backend CPU per written chunk (ms) before and after the build."""
    rng = np.random.default_rng(7)
    ids = [r[0] for r in conn.execute("select id from entities order by id").fetchall()]
    n = len(ids) * chunks_per_entity
    centres = rng.standard_normal((max(10, n // 500), DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)

    def draw(count: int) -> np.ndarray[Any, np.dtype[np.float32]]:
        noise = rng.standard_normal((count, DIM), dtype=np.float32) * 0.03
        points = centres[rng.integers(0, len(centres), count)] + noise
        unit: np.ndarray[Any, np.dtype[np.float32]] = points / np.linalg.norm(points, axis=1, keepdims=True)
        return unit

    vectors = draw(n)
    # The index as the migrations define it (m, ef_construction), rebuilt after the COPY.
    found = conn.execute("select pg_get_indexdef('entity_chunks_embedding_hnsw_idx'::regclass)").fetchone()
    assert found is not None
    definition = str(found[0])
    if hnsw_with:  # an experiment's parameters instead of the migrations'
        definition = (
            "create index entity_chunks_embedding_hnsw_idx on entity_chunks"
            f" using hnsw (embedding vector_cosine_ops) with ({hnsw_with})"
        )
    conn.execute("drop index entity_chunks_embedding_hnsw_idx")
    with conn.cursor() as cur, cur.copy(
        "copy entity_chunks (entity_id, ordinal, body, content_hash, embedding, embedding_model)"
        " from stdin with (format binary)"
    ) as copy:
        copy.set_types(["int8", "int4", "text", "text", "vector", "text"])
        for i, vector in enumerate(vectors):
            copy.write_row((ids[i // chunks_per_entity], i % chunks_per_entity, f"chunk {i}", f"c{i}", vector, MODEL))
    # Changed chunks a later sync would write: a new ordinal past each entity's last, fresh vectors.
    extra = [
        {"entity_id": ids[i % len(ids)], "ordinal": chunks_per_entity + i // len(ids), "body": f"extra {i}",
         "content_hash": f"x{i}", "embedding": vector_text(v), "embedding_model": MODEL}
        for i, v in enumerate(draw(inserts))
    ]  # fmt: skip
    conn.execute("analyze entity_chunks")
    plain_ms = insert_cost(conn, extra)
    conn.execute("set maintenance_work_mem = '2GB'")
    conn.execute("set max_parallel_maintenance_workers = 1")
    started = time.perf_counter()
    conn.execute(definition)
    build_s = time.perf_counter() - started
    conn.execute("analyze entity_chunks")
    row = conn.execute(
        "select t, count(*) from entity_chunks, unnest(acl_principals) t group by t order by count(*) desc limit 1"
    ).fetchone()
    assert row is not None, "no ACL token on any chunk"
    token, share = str(row[0]), int(row[1]) / n
    print(f"  search as {token!r}, who sees {share:.0%} of the {n:,} chunks", flush=True)
    texts = [vector_text(q) for q in draw(queries + 10)]
    seconds = []
    for i, text in enumerate(texts):
        started = time.perf_counter()
        with conn.transaction():
            vector_search(conn, text, MODEL, [token], 10, SearchFilters())
        if i >= 10:  # the first ten warm the cache and the plans
            seconds.append(time.perf_counter() - started)
    hnsw_ms = insert_cost(conn, extra)
    return n, build_s, float(np.percentile(seconds, 95)) * 1000, plain_ms, hnsw_ms


def relation_mb(conn: psycopg.Connection[Any], table: str) -> tuple[float, float]:
    """The table's heap (+ TOAST, FSM, VM) and all its indexes, in MB."""
    row = conn.execute("select pg_table_size(%s::regclass), pg_indexes_size(%s::regclass)", (table, table)).fetchone()
    assert row is not None
    return int(row[0]) / MB, int(row[1]) / MB


def measure(size: int, chunks_per_entity: int, queries: int, inserts: int, hnsw_with: str | None) -> Row:
    # The CLI's data dir (its audit log, backups) is the bench's own and goes with it.
    with (
        jira_emulator(size) as base_url,
        bench_database() as url,
        tempfile.TemporaryDirectory(prefix="hv-growth-") as data_dir,
    ):
        env = dict(
            os.environ,
            HARVESTER_DATABASE_URL=url,
            HARVESTER_SECRET_KEY=os.urandom(32).hex(),
            HARVESTER_EMBEDDER="none",
            HARVESTER_DATA_DIR=data_dir,
        )
        subprocess.run(
            [sys.executable, "-m", "app.cli", "sources", "add", "--name", "bench", "--connector", "jira",
             "--base-url", base_url, "--credential", "bench-token"],
            env=env, check=True, capture_output=True,
        )
        full_s, rss = sync(env, "full")
        noop_s, _ = sync(env, "incremental")
        with connect(url, autocommit=True) as conn:
            register_vector(conn)
            conn.execute("vacuum analyze")
            table_mb, index_mb = {}, {}
            for table in TABLES:
                table_mb[table], index_mb[table] = relation_mb(conn, table)
            count = conn.execute("select count(*) from entities").fetchone()
            entities = int(str(count[0])) if count else 0
            chunks, build_s, p95_ms, plain_ms, hnsw_ms = search_p95(
                conn, chunks_per_entity, queries, inserts, hnsw_with
            )
            table_mb["entity_chunks"], index_mb["entity_chunks"] = relation_mb(conn, "entity_chunks")
    return Row(size, entities, full_s, noop_s, rss, table_mb, index_mb, chunks, build_s, p95_ms, plain_ms, hnsw_ms)


def slope(a: float, b: float, na: int, nb: int) -> str:
    if a <= 0 or b <= 0:
        return "  n/a"
    return f"{math.log(b / a) / math.log(nb / na):5.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--chunks-per-entity", type=int, default=1)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--insert-chunks", type=int, default=2000)
    ap.add_argument(
        "--hnsw-with",
        default=None,
        help="HNSW parameters instead of the migrations', e.g. 'm = 16, ef_construction = 64'",
    )
    args = ap.parse_args()
    print(f"load average at start {' / '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    rows = []
    for size in args.sizes:
        row = measure(size, args.chunks_per_entity, args.queries, args.insert_chunks, args.hnsw_with)
        rows.append(row)
        print(
            f"issues {row.size:>9,}: entities {row.entities:,}, full sync {row.full_s:.1f} s, "
            f"no-op re-sync {row.noop_s:.2f} s, peak RSS {row.peak_rss_mb:.1f} MB, "
            + ", ".join(f"{t} {row.table_mb[t]:.1f}+{row.index_mb[t]:.1f} MB" for t in TABLES)
            + f", {row.chunks:,} chunks: HNSW build {row.hnsw_build_s:.1f} s, search p95 {row.search_p95_ms:.2f} ms"
            + f", a written chunk {row.insert_plain_ms:.3f} ms of backend CPU without the index,"
            + f" {row.insert_hnsw_ms:.3f} with it"
            + f" (load average {os.getloadavg()[0]:.2f})",
            flush=True,
        )
    metrics: list[tuple[str, Any]] = [
        ("full sync s", lambda r: r.full_s),
        ("no-op re-sync s", lambda r: r.noop_s),
        ("peak RSS MB", lambda r: r.peak_rss_mb),
        *((f"{t} table MB", lambda r, t=t: r.table_mb[t]) for t in TABLES),
        *((f"{t} indexes MB", lambda r, t=t: r.index_mb[t]) for t in TABLES),
        ("HNSW build s", lambda r: r.hnsw_build_s),
        ("search p95 ms", lambda r: r.search_p95_ms),
        ("chunk write CPU ms", lambda r: r.insert_plain_ms),
        ("+ HNSW, CPU ms", lambda r: r.insert_hnsw_ms),
        ("HNSW insert CPU ms", lambda r: r.insert_hnsw_ms - r.insert_plain_ms),
    ]
    header = f"{'metric':24}" + "".join(f"{r.size:>12,}" for r in rows)
    header += "".join(f"   slope {a.size:,}->{b.size:,}" for a, b in itertools.pairwise(rows))
    print(header)
    for name, get in metrics:
        line = f"{name:24}" + "".join(f"{get(r):12.2f}" for r in rows)
        line += "".join(
            f"   {slope(get(a), get(b), a.size, b.size):>{len(f'slope {a.size:,}->{b.size:,}')}}"
            for a, b in itertools.pairwise(rows)
        )
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
