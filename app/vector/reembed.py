"""Model-change detection and the background re-embed (issue 5, item 2).

Every chunk records the model that made its vector. When the configured embedder's model differs
from a chunk's, that chunk is stale. ``reembed`` walks the stale chunks in id order, a batch per
transaction: embed the batch's texts, swap the vectors in (``ReplaceChunkEmbeddings``), commit. Rows
keep their old vector until their batch commits, so searches of processes still on the old model go
on working, and each committed batch is immediately searchable with the new model. A chunk the
pipeline rewrote meanwhile (its hash changed) is skipped: the pipeline's vector is newer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from app.embedding import Embedder
from app.queries import embeddings as eq
from app.vector.stage import check_dimension, vector_text

log = logging.getLogger(__name__)

DEFAULT_BATCH = 256


@dataclass(frozen=True, slots=True)
class ModelCount:
    model: str | None  # None: never embedded
    chunks: int


def models_in_use(conn: psycopg.Connection[Any]) -> list[ModelCount]:
    return [ModelCount(r.embedding_model, r.chunks) for r in eq.count_chunks_by_model(conn)]


def stale_chunks(conn: psycopg.Connection[Any], model: str) -> int:
    """How many chunks were not embedded by ``model`` (0: nothing to re-embed)."""
    return sum(m.chunks for m in models_in_use(conn) if m.model != model)


@dataclass(slots=True)
class ReembedResult:
    model: str
    replaced: int = 0
    skipped: int = 0  # rewritten by the pipeline while we embedded them
    batches: int = 0


def reembed(
    conn: psycopg.Connection[Any],
    embedder: Embedder,
    *,
    batch: int = DEFAULT_BATCH,
    on_batch: Callable[[ReembedResult], None] | None = None,
) -> ReembedResult:
    """Re-embed every chunk whose model is not ``embedder``'s, committing one batch at a time.

    ``conn`` must be in autocommit mode (the caller chooses it): each batch is its own transaction,
    and no transaction is held open while the embedder works.
    """
    if not conn.autocommit:
        raise ValueError("reembed needs an autocommit connection (each batch is its own transaction)")
    check_dimension(embedder)
    model = embedder.model_name
    result = ReembedResult(model=model)
    after = 0
    while True:
        rows = eq.list_stale_chunks(conn, after_id=after, model=model, batch=batch)
        if not rows:
            break
        vectors = embedder.embed([r.body for r in rows])
        payload = [
            {"id": r.id, "content_hash": r.content_hash, "embedding": vector_text(v), "embedding_model": model}
            for r, v in zip(rows, vectors, strict=True)
        ]
        with conn.transaction():
            replaced = eq.replace_chunk_embeddings(conn, rows=payload)
        result.replaced += replaced
        result.skipped += len(rows) - replaced
        result.batches += 1
        after = rows[-1].id
        log.info("re-embed to %s: %d chunks replaced so far", model, result.replaced)
        if on_batch is not None:
            on_batch(result)
    return result
