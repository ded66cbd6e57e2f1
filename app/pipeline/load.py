"""Load a batch of entities into the projections, in the caller's transaction, via generated queries."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import psycopg

from app.chunking import Ready
from app.pipeline.transform import edge_rows, entity_row, ref_rows
from app.queries import dead_letters as dlq
from app.queries import entities as q
from connectors.base import Entity, ItemError, SourceType


class ChunkStage(Protocol):
    """Seam for the vector projection: called with the entities whose content changed (issue 5), and
    with what was cut and embedded for them ahead of the transaction, if anything (``ready``)."""

    def apply(
        self, conn: psycopg.Connection[Any], changed: Sequence[tuple[int, Entity]], ready: Ready | None = None
    ) -> None: ...


@runtime_checkable
class PreparingStage(ChunkStage, Protocol):
    """A ChunkStage that can cut and embed outside the page's transaction (app/pipeline/ahead.py): given
    entities and the (hash, model) of every chunk each stores, and the hashes already embedded for the
    same page (``known``), returns the chunks and the vectors of the texts still missing."""

    def prepare(
        self, entities: Sequence[tuple[Entity, Collection[tuple[str, str | None]]]], known: Collection[str] = ()
    ) -> Ready: ...


@dataclass(slots=True)
class Batch:
    entities: list[Entity] = field(default_factory=list)
    errors: list[ItemError] = field(default_factory=list)
    gone: list[tuple[SourceType, str]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.entities) + len(self.errors) + len(self.gone)


@dataclass(slots=True)
class LoadResult:
    written: int = 0  # inserted or changed entity rows
    unchanged: int = 0
    dead_letters: int = 0
    gone: int = 0


def load_batch(
    conn: psycopg.Connection[Any],
    *,
    source_id: int,
    run_id: int,
    batch: Batch,
    record_seen: bool,
    clear_dead_letters: bool = True,
    chunks: ChunkStage | None = None,
    ready: Ready | None = None,
) -> LoadResult:
    """Write one page. ``clear_dead_letters=False`` skips removing loaded items from the DLQ: the caller
    knows the source's queue is empty (one run per source, and only runs add to it)."""
    result = LoadResult()
    # One row per identity per statement: ON CONFLICT cannot touch a row twice; the last sighting wins.
    latest: dict[tuple[str, str], Entity] = {}
    for e in batch.entities:
        latest[(e.source_type, e.source_entity_id)] = e
    entities = list(latest.values())

    if entities:
        changed = q.upsert_entities(conn, source_id=source_id, run_id=run_id, rows=[entity_row(e) for e in entities])
        by_key: dict[tuple[str, str], Entity] = {(e.source_type, e.source_entity_id): e for e in entities}
        written = [(r.id, by_key[(r.source_type, r.source_entity_id)]) for r in changed]
        result.written = len(written)
        result.unchanged = len(entities) - len(written)
        if result.unchanged:
            # Provenance of the unchanged rows (fetched now, by this run): two unindexed columns, a HOT
            # update; rows just written already carry it and are skipped by the statement.
            q.touch_fetched(conn, source_id=source_id, run_id=run_id, rows=_identities(entities))
        if written:
            # UpsertEntities already dropped the old edges and refs of every rewritten entity.
            # Most entities declare neither: skip them without a call each (a page's Python is load time too).
            edges = [row for i, e in written if e.edges for row in edge_rows(i, e)]
            if edges:
                q.insert_edges(conn, source_id=source_id, rows=edges)
            refs = [row for i, e in written if e.refs for row in ref_rows(i, e)]
            if refs:
                q.insert_refs(conn, rows=refs)
            if chunks is not None:
                chunks.apply(conn, written, ready)
        if clear_dead_letters:
            # A loaded item leaves the dead-letter queue (seed 000 "Уход из очереди").
            dlq.delete_dead_letters(conn, source_id=source_id, rows=_identities(entities))

    if record_seen and (entities or batch.errors):
        # A failing item still exists at the source: it must not be soft-deleted as unseen either.
        q.mark_seen(conn, run_id=run_id, rows=_identities([*entities, *batch.errors]))

    if batch.errors:
        # One statement per page, not per item: the DLQ-totals triggers run once per statement (decision 85).
        dlq.upsert_dead_letters(
            conn,
            source_id=source_id,
            run_id=run_id,
            rows=[
                {
                    "source_type": err.source_type,
                    "source_entity_id": err.source_entity_id,
                    "reason": err.reason,
                    "error_detail": err.detail[:2000],
                }
                for err in batch.errors
            ],
        )
    result.dead_letters = len(batch.errors)

    if batch.gone:
        rows = [{"source_type": t, "source_entity_id": i} for t, i in batch.gone]
        dlq.delete_dead_letters(conn, source_id=source_id, rows=rows)
        result.gone = q.soft_delete_items(conn, source_id=source_id, run_id=run_id, rows=rows)
    return result


def _identities(items: Sequence[Entity | ItemError]) -> list[dict[str, str]]:
    return [{"source_type": i.source_type, "source_entity_id": i.source_entity_id} for i in items]
