"""Pipeline embedding throughput vs the bare model at the same batch size (issue 5, benchmarks).

(a) bare: ``session.run`` alone over the chunk texts, tokenised, length-sorted and padded beforehand
    (the model's ceiling at this batch size);
(b) pipeline: ``VectorStage.apply`` on the same tickets, as ``load_batch`` calls it in the page
    transaction: chunking (token counting), ListChunkHashes, ListChunkEmbeddings, the embedder
    (tokenise, sort, pad, run, pool, normalise), formatting vectors, UpsertChunks into entity_chunks
    with its HNSW index, and the commit.
Between runs of (b) the chunks are deleted, so every run embeds and writes everything. Runs alternate
and the best of ``--repeats`` is kept. Ratio b/a: target >= 0.85.

    python bench/embed_pipeline.py [--tickets 64] [--batch-size 32] [--threads N] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path
from typing import cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from app.db.connect import connect
from app.embedding.local import LocalEmbedder, pad_batch
from app.pipeline.load import Batch, load_batch
from app.secrets import Keyring
from app.services.sources import NewSource, create_source
from app.vector.stage import VectorStage
from bench._db import bench_database
from bench.embed_throughput import VOCABULARY
from connectors.base import Acl, Entity


def tickets(count: int, seed: int = 5) -> list[Entity]:
    """Tickets of 8 comments of ~5 sentences each: every comment becomes one ~74-token chunk."""
    rng = random.Random(seed)
    out = []
    for n in range(count):
        comments = [
            " ".join(
                " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(8, 12))).capitalize() + "."
                for _ in range(5)
            )
            for _ in range(8)
        ]
        out.append(Entity(
            source_type="ticket", source_entity_id=str(n), status="final", title=f"OPS-{n} Replica lag after deploy",
            text="\n\n".join(comments), url=None, author=None, created_at=None, updated_at=None,
            acl=Acl(("group:jira:ops",)), sections=tuple(comments),
        ))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tickets", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    embedder = LocalEmbedder(batch_size=args.batch_size, threads=args.threads)
    stage = VectorStage(embedder)
    entities = tickets(args.tickets)
    texts = [c.text for e in entities for c in stage.chunks_of(e)]
    batches = [
        pad_batch(rows[i : i + args.batch_size])
        for rows in [sorted((e.ids for e in embedder.tokenize(texts)), key=len)]
        for i in range(0, len(rows), args.batch_size)
    ]

    def bare() -> float:
        started = time.perf_counter()
        for ids, mask in batches:
            embedder.session.run(
                ["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            )
        return time.perf_counter() - started

    with bench_database() as url, connect(url) as conn:
        source_id = create_source(
            conn, Keyring(current=os.urandom(32)),
            NewSource(name="bench", connector_type="jira", base_url="http://127.0.0.1:9", credential="x"),
        )
        load_batch(conn, source_id=source_id, run_id=0, batch=Batch(entities=entities), record_seen=False)
        conn.commit()
        ids: dict[str, int] = {
            str(e): cast(int, i) for e, i in conn.execute("select source_entity_id, id from entities").fetchall()
        }
        changed = [(int(ids[e.source_entity_id]), e) for e in entities]

        def pipeline() -> float:
            conn.execute("delete from entity_chunks")
            conn.commit()
            started = time.perf_counter()
            stage.apply(conn, changed)
            conn.commit()
            return time.perf_counter() - started

        bare()  # warm-up: the session's arenas
        pipeline()
        bare_s, pipe_s = [], []
        for _ in range(args.repeats):
            bare_s.append(bare())
            pipe_s.append(pipeline())
        written = conn.execute("select count(*) from entity_chunks").fetchone()
        conn.commit()

    bare_rate, pipe_rate = len(texts) / min(bare_s), len(texts) / min(pipe_s)
    print(f"model       {embedder.model_name}, {embedder.threads} threads, batch {args.batch_size}")
    print(f"chunks      {len(texts)} from {len(entities)} tickets; rows written per pipeline run "
          f"{written[0] if written else '?'}")
    print(f"(a) bare session.run, length-sorted batches   {bare_rate:7.1f} chunks/s")
    print(f"(b) VectorStage.apply (chunk+embed+write+commit) {pipe_rate:7.1f} chunks/s")
    print(f"ratio b/a   {pipe_rate / bare_rate:.3f}   (target >= 0.85; best of {args.repeats})")


if __name__ == "__main__":
    main()
