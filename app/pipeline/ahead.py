"""Map, cut and embed a page's items on a thread of their own while the source is still being fetched
(issue 15 §1): the embedding stage.

The page producer (app/pipeline/prefetch.py) hands every ``GROUP`` raw items it has fetched to
:class:`EmbedAhead`, with what those items store now (read on the producer's own connection), before
their page is even complete. The embedding thread maps the group, cuts the entities whose content hash
differs from the stored one and embeds the texts they do not store yet (``PreparingStage.prepare``;
onnxruntime and an HTTP embedder release the GIL, so this runs beside the fetch and the commits). Each
group's result is a :class:`~concurrent.futures.Future` carried by its page; the run's thread waits for
all of a page's futures before it opens the page's transaction. So a page still commits in order, whole,
with its checkpoint, and only once its vectors are ready; nothing is written here, so a crash or a lost
lease drops the futures with the pages and the resumed run does the work again.

What was read ahead may be stale by the time the page commits (the same entity changed on an earlier
page still in flight): the transaction's ``apply`` compares with what is stored then and embeds any text
missing from the ready vectors itself, so a stale read costs time, never correctness.

Bounded: the futures belong to pages the prefetch queue holds, so the work waiting here is at most the
items of the pages in flight. The thread takes jobs in order, so page N's groups finish before page
N+1's. A failure (an embedder that gives up, a mapping bug) is set on the group's future and raised by
the run's thread at that page, after the pages before it committed.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

from app.chunking import Identity, Ready
from app.pipeline.load import PreparingStage
from app.pipeline.transform import content_hash
from connectors.base import Entity, MalformedPayload, RawItem

GROUP = 16  # raw items per embedding job: small enough that the last job's embedding is a short tail
POLL = 0.2  # seconds between stop checks of the idle thread


@dataclass(slots=True)
class Stored:
    """What an entity stores now: its content hash, whether it is soft-deleted, its chunks' (hash, model)."""

    entity_hash: str
    deleted: bool
    chunks: list[tuple[str, str | None]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Prepared:
    """One group's result: per raw item (in order) its entity or the reason it could not be mapped, and
    the chunks and vectors made for the entities that changed."""

    mapped: list[Entity | MalformedPayload]
    ready: Ready


@dataclass(frozen=True, slots=True)
class _Job:
    page: int
    items: list[RawItem]
    stored: Mapping[Identity, Stored]
    future: Future[Prepared]


class EmbedAhead:
    """The embedding thread: :meth:`submit` groups of raw items, wait on the futures it returns."""

    def __init__(
        self,
        stage: PreparingStage,
        map_item: Callable[[RawItem], Entity],
        *,
        name: str = "embed-ahead",
        join_timeout: float = 30.0,
    ) -> None:
        self._stage = stage
        self._map_item = map_item
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._join_timeout = join_timeout
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        # Hashes embedded for the page being prepared: a text repeated across its groups is embedded once.
        self._page = -1
        self._known: set[str] = set()

    def __enter__(self) -> EmbedAhead:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def submit(self, page: int, items: Sequence[RawItem], stored: Mapping[Identity, Stored]) -> Future[Prepared]:
        """Queue ``items`` of page number ``page`` (pages numbered in order); never blocks."""
        future: Future[Prepared] = Future()
        self._jobs.put(_Job(page, list(items), stored, future))
        return future

    def close(self) -> None:
        """Stop after the job in hand (an embedding call is not interrupted); queued jobs are cancelled."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(self._join_timeout)
        while True:
            try:
                self._jobs.get_nowait().future.cancel()
            except queue.Empty:
                break

    @property
    def stopped(self) -> bool:
        return not self._thread.is_alive()

    def _work(self) -> None:
        while not self._stop.is_set():
            try:
                job = self._jobs.get(timeout=POLL)
            except queue.Empty:
                continue
            if not job.future.set_running_or_notify_cancel():
                continue
            try:
                job.future.set_result(self._prepare(job))
            except BaseException as exc:  # raised by the run's thread at this page
                job.future.set_exception(exc)

    def _prepare(self, job: _Job) -> Prepared:
        if job.page != self._page:
            self._page, self._known = job.page, set()
        mapped: list[Entity | MalformedPayload] = []
        changed: list[tuple[Entity, list[tuple[str, str | None]]]] = []
        for item in job.items:
            try:
                entity = self._map_item(item)
            except MalformedPayload as exc:
                mapped.append(exc)
                continue
            mapped.append(entity)
            stored = job.stored.get((entity.source_type, entity.source_entity_id))
            if stored is not None and not stored.deleted and stored.entity_hash == content_hash(entity):
                continue  # UpsertEntities will leave it alone: no chunk of it is written
            changed.append((entity, stored.chunks if stored is not None else []))
        ready = self._stage.prepare(changed, self._known) if changed else Ready()
        self._known.update(ready.vectors)
        return Prepared(mapped, ready)
