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

A connector may announce a page's items before their rights are read (``connectors.base.Preview``,
decision 107): the producer submits them under the page's number and drops their futures. Their vectors
join the page's content-addressed store below, so the page's own groups embed only the texts that differ
(an attachment the preview could not read); the preview's mapped entities, which lack the rights, are
never loaded.

What was read ahead may be stale by the time the page commits (the same entity changed on an earlier
page still in flight): the transaction's ``apply`` compares with what is stored then and embeds any text
missing from the ready vectors itself, so a stale read costs time, never correctness.

Bounded: the futures belong to pages the prefetch queue holds, so the work waiting here is at most the
items of the pages in flight. The thread takes jobs in order, so page N's groups finish before page
N+1's. When the embedder is the slower side, groups wait here; the thread then takes up to ``COALESCE``
of one page's queued groups and embeds their texts in one call: a longer list of length-sorted texts
pads less (the embedder cuts its batches by padding, decision 64), and the embedder is the bottleneck
exactly when groups queue. A failure (an embedder that gives up, a mapping bug) is set on the future of
every group that sent texts to that call (all of one page) and raised by the run's thread at that page,
after the pages before it committed.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TypeVar

from app.chunking import Identity, Ready
from app.http_answer import abandon_when
from app.pipeline.load import PreparingStage
from app.pipeline.transform import content_hash
from connectors.base import Entity, MalformedPayload, RawItem

GROUP = 16  # raw items per embedding job: small enough that the last job's embedding is a short tail
# How long a group may wait for more items while the embedding thread has nothing to do
# (``EmbedAhead.idle``) before it is handed over as it is. A source that reads each item's rights or
# attachments one request after another trickles items (Confluence at 100 ms a request: the 1st at 0.45 s,
# the 16th at 1.18 s), and the embedder idled until a whole group was in; items that come in a burst still
# fill whole groups. Decision 126: Confluence's run 3-4 % shorter, Slack's 3 % longer (more, smaller calls);
# handing over only a run's first group early changed neither. The producer looks at a waiting group when an
# item comes and, since the connector runs on a thread of its own (decision 132), every app.pipeline.run.TICK
# while it waits for one.
EARLY_AFTER = 0.1
# Queued groups one embedding call may take (only those already waiting: an idle thread never waits
# for more). 4 x 16 items: enough texts to sort away most padding, a tail of a few seconds at most.
COALESCE = 4
POLL = 0.2  # seconds between stop checks of the idle thread

K = TypeVar("K")
V = TypeVar("V")


def of_page(by_page: dict[int, dict[K, V]], page: int) -> dict[K, V]:
    """``page``'s entry of a per-page store, made when missing. A page's entry is kept while the next page's
    comes (a preview of it, announced ahead, decision 138), no longer: older pages' go when a new one comes."""
    if page not in by_page:
        for older in [n for n in by_page if n < page - 1]:
            del by_page[older]
    return by_page.setdefault(page, {})


# An entity to cut and embed, with the (hash, model) of every chunk it stores now.
Changed = tuple[Entity, list[tuple[str, str | None]]]


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
    # A preview of a page ahead of the one still coming (decision 138): embedded in a call of its own, so
    # that the page before's last groups, which wait behind whatever call is running, wait for one group.
    solo: bool = False


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
        # Jobs by (page, order of submission): a page's groups go before a preview of the page after it that
        # was queued earlier (decision 138). None (page -1) wakes an idle thread at close, so closing does not
        # wait out its poll.
        self._jobs: queue.PriorityQueue[tuple[int, int, _Job | None]] = queue.PriorityQueue()
        self._order = itertools.count()
        self._stop = threading.Event()
        self._join_timeout = join_timeout
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        # Vectors embedded for each page being prepared (page -> content hash -> vector): a text repeated
        # across a page's groups is embedded once, and every later group of the page is handed the vector.
        # A page's are kept while the next page's preview is embedded before its last groups (decision 138).
        self._known: dict[int, dict[str, str]] = {}
        # Jobs submitted and not yet done: the producer reads it to hand a short group to an idle thread.
        self._pending = 0
        self._pending_lock = threading.Lock()

    def __enter__(self) -> EmbedAhead:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def submit(
        self, page: int, items: Sequence[RawItem], stored: Mapping[Identity, Stored], *, solo: bool = False
    ) -> Future[Prepared]:
        """Queue ``items`` of page number ``page`` (pages numbered in order); never blocks. ``solo``: a preview
        of a page ahead, embedded in a call of its own."""
        future: Future[Prepared] = Future()
        with self._pending_lock:
            self._pending += 1
        future.add_done_callback(self._done)
        self._jobs.put((page, next(self._order), _Job(page, list(items), stored, future, solo)))
        return future

    @property
    def idle(self) -> bool:
        """No job queued or in hand: whatever is handed over now is embedded at once."""
        return self._pending == 0

    def _done(self, _future: Future[Prepared]) -> None:
        with self._pending_lock:
            self._pending -= 1

    def close(self) -> None:
        """Stop after the job in hand (an embedding call is not interrupted); queued jobs are cancelled."""
        self._stop.set()
        self._jobs.put((-1, next(self._order), None))
        if self._thread.is_alive():
            self._thread.join(self._join_timeout)
        while True:
            try:
                _, _, job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                job.future.cancel()

    @property
    def stopped(self) -> bool:
        return not self._thread.is_alive()

    def _work(self) -> None:
        # A run that stops closes this stage: an embedding call waiting on a remote endpoint gives its
        # answer up then, instead of holding close() for its join timeout and running on (decision 167).
        with abandon_when(self._stop):
            self._take_jobs()

    def _take_jobs(self) -> None:
        while not self._stop.is_set():
            try:
                _, _, first = self._jobs.get(timeout=POLL)
            except queue.Empty:
                continue
            if first is None:
                continue  # woken to stop
            jobs = [first]
            # Only groups of one page share a call: a failed call then fails that page alone, and the
            # pages before it commit, as when every group had a call of its own.
            while len(jobs) < (1 if first.solo else COALESCE):
                try:
                    entry = self._jobs.get_nowait()
                except queue.Empty:
                    break
                job = entry[2]
                if job is None:
                    break  # woken to stop: the jobs in hand are prepared first
                if job.page != jobs[0].page or job.solo:
                    self._jobs.put(entry)  # a later page's, or a preview ahead: it keeps its place
                    break
                jobs.append(job)
            self._prepare([job for job in jobs if job.future.set_running_or_notify_cancel()])

    def _prepare(self, jobs: list[_Job]) -> None:
        """Map each job's items, then cut and embed the changed entities of consecutive jobs in one call;
        set each job's future (a mapping failure on its own job, an embedding failure on its call's)."""
        segment: list[tuple[_Job, list[Entity | MalformedPayload], list[Changed]]] = []
        seen: set[Identity] = set()
        for job in jobs:
            try:
                mapped, changed = self._map(job)
            except BaseException as exc:  # raised by the run's thread at this page
                job.future.set_exception(exc)
                continue
            identities: set[Identity] = {(e.source_type, e.source_entity_id) for e, _ in changed}
            if identities & seen:
                # The same record twice on one page, changed in between: its chunks are cut per version,
                # so the later version goes into a call of its own.
                self._embed(segment)
                segment, seen = [], set()
            segment.append((job, mapped, changed))
            seen |= identities
        self._embed(segment)

    def _embed(self, segment: list[tuple[_Job, list[Entity | MalformedPayload], list[Changed]]]) -> None:
        """One embedding call for the changed entities of ``segment`` (groups of one page)."""
        if not segment:
            return
        page = segment[0][0].page
        known = of_page(self._known, page)
        changed = [entry for _, _, group in segment for entry in group]
        try:
            ready = self._stage.prepare(changed, known) if changed else Ready()
        except BaseException as exc:
            # Which text failed the call is not known, so every group that sent one fails with it; a group
            # that sent none (nothing changed, or only malformed items) did not depend on the call.
            for job, mapped, group in segment:
                if group:
                    job.future.set_exception(exc)
                else:
                    job.future.set_result(Prepared(mapped, Ready()))
            return
        # Content-addressed, so every group of the call may be handed all of it and what the page embedded
        # before: the transaction looks up the hashes its own entities need.
        self._known[page] = vectors = {**known, **ready.vectors}
        for job, mapped, group in segment:
            own: set[Identity] = {(e.source_type, e.source_entity_id) for e, _ in group}
            cut = {identity: chunks for identity, chunks in ready.cut.items() if identity in own}
            job.future.set_result(Prepared(mapped, Ready(vectors=vectors, cut=cut)))

    def _map(self, job: _Job) -> tuple[list[Entity | MalformedPayload], list[Changed]]:
        """The job's items mapped (or why not), in order, and the entities whose content hash differs from
        the stored one, each with the chunks it stores."""
        mapped: list[Entity | MalformedPayload] = []
        changed: list[Changed] = []
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
        return mapped, changed
