"""The pipeline's vector stage: chunk changed entities, embed only chunks whose text is new.

Called by ``load_batch`` inside the page transaction with the entities whose row was inserted or
changed; an unchanged entity never gets here, so it touches no chunk row. For a changed entity:

1. ``chunk_entity`` cuts it (deterministic; each chunk's ``content_hash`` is the sha256 of its text), and
   a text the entity repeats is kept once, ordinals renumbered (``distinct_chunks``, decision 128);
2. chunks whose (ordinal, hash, model) equal the stored row are left alone: no embedding, no write;
3. the others reuse a stored vector of the same entity with the same hash and model when there is
   one (a paragraph inserted above shifts ordinals, not texts), else are embedded: every such text
   of the page in one ``embed`` call (the embedder batches), identical texts once;
4. ``UpsertChunks`` writes them with the model name; ``DeleteChunksFrom`` drops a shortened tail.

Embedding ahead (issue 15 §1): :meth:`VectorStage.prepare` runs on the pipeline's embedding thread
before the page's transaction, with what the items stored when their page was fetched; it cuts the
entities and embeds the texts they do not store yet. ``apply`` then takes those chunks and vectors
(``ready``) instead of cutting and embedding again. The transaction still decides: a text that is not
stored by then after all (the entity changed twice in the run) and not in ``ready`` is embedded there.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson
import psycopg

from app.chunking import Chunk, Identity, Ready, chunk_entity, distinct_chunks
from app.embedding import Embedder, EmbeddingError
from app.queries import chunks as cq
from app.queries import embeddings as eq
from connectors.base import Entity

log = logging.getLogger(__name__)

# entity_chunks.embedding is vector(384) (sql/schema/20261130000002_content_projections.sql).
SCHEMA_DIMENSION = 384


def vector_text(row: npt.NDArray[np.float32] | Iterable[float]) -> str:
    """pgvector's text form '[x,y,...]' of the row as float32, each element the shortest decimal that reads
    back as the same float32 (orjson's float32 writer; pgvector reads with ``strtof``), so the stored
    vector is exactly the row. A 384-d row costs ~10 µs, where formatting each element with ``.9g`` cost
    ~150 µs, on the embedding thread, with the interpreter lock held (decision 147). A row that is not
    one-dimensional or holds NaN or infinity is refused by name here, not as pgvector's syntax error."""
    vector = np.ascontiguousarray(row, dtype=np.float32)
    if vector.ndim != 1 or not np.isfinite(vector).all():
        raise EmbeddingError(
            f"the embedder returned a vector that cannot be stored: shape {vector.shape}, "
            f"{int(np.count_nonzero(~np.isfinite(vector)))} values NaN or infinite"
        )
    return orjson.dumps(vector, option=orjson.OPT_SERIALIZE_NUMPY).decode()


def check_dimension(embedder: Embedder) -> None:
    if embedder.dimension != SCHEMA_DIMENSION:
        raise EmbeddingError(
            f"embedder {embedder.model_name!r} makes {embedder.dimension}-d vectors; entity_chunks.embedding "
            f"is vector({SCHEMA_DIMENSION}): a model of another size needs a schema migration first"
        )


@dataclass(slots=True)
class StageStats:
    """Counters for tests and logs: what the stage embedded, reused, wrote and deleted. ``prepare`` (the
    embedding thread) and ``apply`` (the load thread) both count, so they add under one lock."""

    chunks: int = 0  # chunks of changed entities
    unchanged: int = 0  # equal hash and model: not touched
    reused: int = 0  # vector copied from another ordinal of the same entity
    embedded: int = 0  # texts sent to the embedder
    written: int = 0
    deleted: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(
        self, *, chunks: int = 0, unchanged: int = 0, reused: int = 0, embedded: int = 0, written: int = 0,
        deleted: int = 0,
    ) -> None:  # fmt: skip
        with self._lock:
            self.chunks += chunks
            self.unchanged += unchanged
            self.reused += reused
            self.embedded += embedded
            self.written += written
            self.deleted += deleted


class VectorStage:
    """``ChunkStage`` for the pipeline (app/pipeline/load.py)."""

    def __init__(self, embedder: Embedder) -> None:
        check_dimension(embedder)
        self.embedder = embedder
        self.stats = StageStats()

    def chunks_of(self, entity: Entity) -> list[Chunk]:
        """The chunks stored for ``entity``: each distinct text once (decision 128)."""
        return distinct_chunks(
            chunk_entity(
                entity.title,
                entity.text,
                entity.sections,
                max_tokens=self.embedder.max_tokens,
                count_tokens=self.embedder.count_tokens,
            )
        )

    def prepare(
        self,
        entities: Sequence[tuple[Entity, Collection[tuple[str, str | None]]]],
        known: Collection[str] = (),
    ) -> Ready:
        """Cut ``entities`` (each with the (hash, model) of every chunk it stores) and embed, in one call,
        the texts none of its stored chunks of this model carries and ``known`` (hashes embedded
        ahead already for the same page) does not hold. Touches no database."""
        model = self.embedder.model_name
        ready = Ready()
        to_embed: dict[str, str] = {}
        for entity, stored in entities:
            chunks = self.chunks_of(entity)
            ready.cut[(entity.source_type, entity.source_entity_id)] = chunks
            have = {h for h, m in stored if m == model}
            for chunk in chunks:
                if chunk.content_hash not in have and chunk.content_hash not in known:
                    to_embed.setdefault(chunk.content_hash, chunk.text)
        if to_embed:
            vectors = self.embedder.embed(list(to_embed.values()))
            self.stats.add(embedded=len(to_embed))
            ready.vectors = {h: vector_text(v) for h, v in zip(to_embed, vectors, strict=True)}
        return ready

    def apply(
        self, conn: psycopg.Connection[Any], changed: Sequence[tuple[int, Entity]], ready: Ready | None = None
    ) -> None:
        if not changed:
            return
        model = self.embedder.model_name
        cut: Mapping[Identity, list[Chunk]] = ready.cut if ready is not None else {}
        ahead: Mapping[str, str] = ready.vectors if ready is not None else {}
        ids = [entity_id for entity_id, _ in changed]
        stored: dict[tuple[int, int], tuple[str, str | None]] = {
            (r.entity_id, r.ordinal): (r.content_hash, r.embedding_model)
            for r in cq.list_chunk_hashes(conn, entity_ids=ids)
        }
        pending: list[tuple[int, Chunk]] = []
        counts: dict[int, int] = {}
        unchanged = reused = embedded = written = deleted = 0
        for entity_id, entity in changed:
            chunks = cut.get((entity.source_type, entity.source_entity_id))
            if chunks is None:
                chunks = self.chunks_of(entity)
            counts[entity_id] = len(chunks)
            for chunk in chunks:
                if stored.get((entity_id, chunk.ordinal)) == (chunk.content_hash, model):
                    unchanged += 1
                else:
                    pending.append((entity_id, chunk))

        rows: list[dict[str, Any]] = []
        if pending:
            # (entity, hash) -> stored vector text of this model, for chunks that only moved.
            reusable = {
                (r.entity_id, r.content_hash): r.embedding
                for r in eq.list_chunk_embeddings(conn, entity_ids=sorted({e for e, _ in pending}), model=model)
            }
            to_embed: dict[str, str] = {}  # hash -> text, one embedding per distinct text
            for entity_id, chunk in pending:
                if (entity_id, chunk.content_hash) not in reusable and chunk.content_hash not in ahead:
                    to_embed.setdefault(chunk.content_hash, chunk.text)
            fresh: dict[str, str] = dict(ahead)
            if to_embed:
                vectors = self.embedder.embed(list(to_embed.values()))
                embedded = len(to_embed)
                fresh.update((h, vector_text(v)) for h, v in zip(to_embed, vectors, strict=True))
            for entity_id, chunk in pending:
                vector = reusable.get((entity_id, chunk.content_hash))
                if vector is None:
                    vector = fresh[chunk.content_hash]
                else:
                    reused += 1
                rows.append(
                    {
                        "entity_id": entity_id,
                        "ordinal": chunk.ordinal,
                        "body": chunk.text,
                        "content_hash": chunk.content_hash,
                        "embedding": vector,
                        "embedding_model": model,
                    }
                )
            written = cq.upsert_chunks(conn, rows=rows)

        stored_count: dict[int, int] = {}
        for entity_id, ordinal in stored:
            stored_count[entity_id] = max(stored_count.get(entity_id, 0), ordinal + 1)
        for entity_id, count in counts.items():
            if stored_count.get(entity_id, 0) > count:
                # The stored tail past the new last ordinal: the text got shorter (or empty).
                deleted += cq.delete_chunks_from(conn, entity_id=entity_id, first_removed=count)
        self.stats.add(
            chunks=sum(counts.values()), unchanged=unchanged, reused=reused, embedded=embedded, written=written,
            deleted=deleted,
        )  # fmt: skip
        log.debug("vector stage: %d entities, %d chunks, %d to write", len(changed), sum(counts.values()), len(rows))
