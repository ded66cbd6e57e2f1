"""Execute one sync run: claim it, enumerate, transform, load page by page, resolve, finish.

One path for every mode (seed 001): ``full`` fetches since the epoch, ``incremental`` since the cursor
minus a look-back, ``reconciliation`` everything and then soft-deletes what it did not see, restores
what came back (the upsert clears ``deleted_at``) and collapses duplicates. A run with an items scope
(DLQ retry, webhook deltas) fetches exactly those identities.

Crash safety: every page commits its rows, the connector's checkpoint and the counters in one
transaction; a resumed run starts after the last committed page, so ``entities_done`` is exact.
Every unit of work first holds the run's fenced lease (app/pipeline/lease.py): a worker that lost the
run (paused past the stale threshold and taken over, or cancelled) stops at its next unit having written
nothing, and never clears the seen-set the new holder is filling. A lost database connection leaves the
run running with its checkpoint (:class:`ConnectionLost`); the caller resumes it once the database is back.

Transactions: the caller (a job or a CLI command) opens the connection in autocommit mode and this
module declares its units of work as ``with conn.transaction():`` blocks (the claim, each page, the
resolution with the run's end); a single statement outside a block (a heartbeat, a read) is its own
unit. Nothing here calls ``commit()`` or ``rollback()``: leaving a block commits it, an exception
rolls it back, and :class:`LeaseLost` raised by the lease check drops a unit whose run is no longer ours.
With read-ahead, a page's transaction runs on a writer thread while the run's thread maps the next page
(app/pipeline/write_behind.py, decision 122): one at a time and in order, and the run's thread uses the
connection again only once that write has ended.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from app.chunking import Ready
from app.embedding import EmbeddingError
from app.errors import HarvesterError
from app.pipeline import completeness
from app.pipeline.ahead import EARLY_AFTER, GROUP, EmbedAhead, Prepared, Stored, of_page
from app.pipeline.checkpoint import RunCheckpoint
from app.pipeline.lease import ConnectionFactory, Heartbeat, LeaseLost, RunLease, beat_interval
from app.pipeline.load import Batch, ChunkStage, PreparingStage, load_batch
from app.pipeline.prefetch import Prefetch
from app.pipeline.session_limits import bound_lock_waits, lock_wait_detail, run_session_limits
from app.pipeline.source_process import GateLost, SourceProcess
from app.pipeline.watermark import MovingWatermark, Watermark
from app.pipeline.write_behind import WriteBehind
from app.queries import chunks as cq
from app.queries import dead_letters as dq
from app.queries import entities as eq
from app.queries import runs as rq
from app.queries import sources as sq
from app.registry import get_spec
from app.secrets import Keyring
from app.services.connectors import source_config
from app.services.rate_budget import PgRateGate, with_rate_budget
from app.settings import PlatformSettings, load_settings
from connectors.base import (
    ANY_CONTAINER,
    CallStats,
    Checkpoint,
    Connector,
    Emitted,
    Entity,
    ItemError,
    ItemGone,
    MalformedPayload,
    Preview,
    RawItem,
    SourceConfig,
    SourceError,
    SourceType,
)
from connectors.http import HttpError

log = logging.getLogger(__name__)

ITEMS_PER_PAGE = 50  # identities fetched per committed page in an items-scoped run (DLQ retry, webhook)
# Pages fetched ahead of the one being loaded (issue 15 §1): the source's latency hides behind our own
# work. 0 fetches each page only after the previous one committed (the sequential loop).
DEFAULT_PREFETCH = 3
# With the embedding stage: items the connector's own thread may run ahead of the producer, and how often
# the producer, waiting for the next, looks whether a waiting group should go to an idle embedder.
SOURCE_AHEAD = 64
TICK = 0.02
# Seconds between the run thread's looks at the lease while it waits for the read-ahead's next page.
LEASE_TICK = 0.2
# Lane lock (seed 001 "Координация полос"): Knowledge Store takes pg_advisory_lock(LANE_LOCK_CLASS,
# source_id) around destructive steps; a run holds the shared form for its whole duration.
LANE_LOCK_CLASS = 0x48565354  # "HVST"


class LaneBusy(Exception):
    """The source's lane is held by an external process; the run stays queued and is retried."""


class ConnectionLost(Exception):
    """The run's database connection broke mid-run. Nothing of the unit in flight was kept; the run stays
    ``running`` with its last checkpoint, to be resumed (by :func:`resume_after_connection_loss` or, once its
    heartbeat is stale, by any worker)."""

    def __init__(self, lease: RunLease) -> None:
        super().__init__(f"run {lease.run_id}: the database connection was lost")
        self.lease = lease


def execution_id(worker: str) -> str:
    """A worker id that also tells two executions inside one process apart (hostname:pid:uuid)."""
    return f"{worker}:{uuid.uuid4().hex[:12]}"


def conninfo_of(conn: psycopg.Connection[Any], name: str) -> str:
    """How to connect to the database ``conn`` is connected to, as ``conn`` did, named ``name``."""
    params: dict[str, Any] = dict(conn.info.get_parameters())
    if conn.info.password:
        params["password"] = conn.info.password
    params["application_name"] = name
    return make_conninfo("", **params)


def sibling_connection(conn: psycopg.Connection[Any], name: str = "harvester-lease") -> ConnectionFactory:
    """Opens autocommit connections to the database ``conn`` is connected to (the heartbeat's own, the
    read-ahead's rate gate), named ``name`` in pg_stat_activity."""
    conninfo = conninfo_of(conn, name)

    def open_connection() -> psycopg.Connection[Any]:
        return psycopg.connect(conninfo, autocommit=True, connect_timeout=10)

    return open_connection


@dataclass(frozen=True, slots=True)
class PageWrite:
    """One mapped page, ready to commit: its rows and, as of this page, the checkpoint and counters."""

    batch: Batch
    ready: Ready | None
    checkpoint: dict[str, Any]  # RunCheckpoint.to_json()
    done: int
    total: int | None
    errors: int
    api_calls: int
    rate_limited: int
    # The counters a failed write leaves the run with: those of its first page (done, total, errors). The
    # sequential loop would have stopped at that page; a joined write (decision 142) that fails commits none
    # of its pages, so the run must not report the later pages as done (decision 144).
    stopped_at: tuple[int, int | None, int]


# Items one joined write may carry (decision 142): up to ten pages of 100 share a transaction's round trips
# when the writer falls behind, and a transaction's rows, locks and page text stay small. 0: no joins
# (bench/db_distance.py's "apart" runs).
JOIN_MAX_ITEMS = 1000


def join_writes(waiting: PageWrite, work: PageWrite) -> PageWrite | None:
    """One write for two consecutive pages (``waiting`` first), committed with the later page's checkpoint
    and counters, or None when they must be written apart. Should the joined write fail, the run stops at
    ``waiting``'s counters (``stopped_at``): none of the pages committed.

    Only pages of entities join: within one transaction the dead-letter queue, the seen-set and the
    soft-deletes are written in a fixed order per batch, while two pages one after the other may hold the
    same item as a failure and then as an entity, or as gone and then back; written apart, the later page
    wins, as it must. The entities of a joined batch keep their order: the loader keeps each identity's last
    sighting. Pages whose vectors were prepared join only pages whose vectors were prepared too."""
    a, b = waiting.batch, work.batch
    if JOIN_MAX_ITEMS <= 0 or a.errors or a.gone or b.errors or b.gone:
        return None
    if len(a.entities) + len(b.entities) > JOIN_MAX_ITEMS:
        return None
    if (waiting.ready is None) != (work.ready is None):
        return None
    ready = None
    if waiting.ready is not None and work.ready is not None:
        ready = Ready()
        ready.merge(waiting.ready)
        ready.merge(work.ready)
    return replace(work, batch=Batch(entities=[*a.entities, *b.entities]), ready=ready, stopped_at=waiting.stopped_at)


@dataclass(frozen=True, slots=True)
class Page:
    """One page to commit, with what the run knew once it was fetched (the producer may be pages ahead,
    so the run's own fields advance only when the page commits)."""

    items: list[RawItem | ItemError | ItemGone]
    position: Mapping[str, Any] | None  # the connector position after it; None: the tail after the last one
    total: int | None  # the source's item total as of this page, if it reports one
    complete: bool  # the enumeration ended with this page
    api_calls: int  # CallStats as of this page's end: a resumed run re-fetches what came after it
    rate_limited: int
    # Its raw items mapped, cut and embedded on the embedding thread, one future per group, in order
    # (app/pipeline/ahead.py); empty: the run's thread maps the page and the transaction embeds it.
    ahead: tuple[Future[Prepared], ...] = ()


@dataclass(slots=True)
class Progress:
    run_id: int
    done: int
    total: int | None
    errors: int
    started: float = field(default_factory=time.monotonic)


ProgressCallback = Callable[[Progress], None]


@dataclass(frozen=True, slots=True)
class RunOutcome:
    run_id: int
    state: str  # succeeded | failed | cancelled | skipped (not claimable)
    done: int = 0
    errors: int = 0
    detail: str | None = None
    deleted: int = 0
    # Seconds the run's thread spent getting its next page (waiting for the read-ahead, or fetching it when
    # prefetch is off) and waiting for a page's vectors from the embedding thread: what bound the run.
    page_wait: float = 0.0
    vector_wait: float = 0.0
    # Seconds it waited for the writer thread to end the page before (read-ahead on, decision 122); with
    # read-ahead off the run's thread writes each page itself and this stays 0.
    write_wait: float = 0.0
    # Pages committed in the transaction of the page before them: the writer had fallen behind (decision 142).
    write_joined: int = 0


def try_lane(conn: psycopg.Connection[Any], source_id: int) -> bool:
    from app.queries import lanes

    return bool(lanes.try_lane_shared(conn, lane_class=LANE_LOCK_CLASS, source_id=source_id))


def release_lane(conn: psycopg.Connection[Any], source_id: int) -> None:
    from app.queries import lanes

    lanes.release_lane_shared(conn, lane_class=LANE_LOCK_CLASS, source_id=source_id)


def execute_run(
    conn: psycopg.Connection[Any],
    run_id: int,
    *,
    worker_id: str,
    keyring: Keyring,
    chunks: ChunkStage | None = None,
    on_progress: ProgressCallback | None = None,
    heartbeat_connection: ConnectionFactory | None = None,
    prefetch: int = DEFAULT_PREFETCH,
    source_process: bool | None = False,
) -> RunOutcome:
    """Run ``run_id`` to a terminal state on ``conn``. Raises :class:`LaneBusy`, :class:`ConnectionLost`.

    ``worker_id`` must be unique per execution (:func:`execution_id`): the lease is fenced by it and by
    the claim's generation. ``heartbeat_connection`` opens the heartbeat thread's own connection (default:
    one more connection to ``conn``'s database). ``prefetch`` pages are fetched ahead of the page being
    loaded, on a producer thread (0: fetch only after each commit). ``source_process``: with read-ahead, a
    whole-source run lists its source in a child process (:mod:`app.pipeline.source_process`); None: a full or
    reconciliation run does if the connector's manifest says ``listing_apart`` (decision 153; an incremental
    one lists here, decision 154), as a worker and ``harvester sync`` run it when ``HARVESTER_SOURCE_PROCESS``
    is unset.

    ``conn`` must be in autocommit mode: the run is many transactions (one per page), each declared
    here as a ``conn.transaction()`` block; on a connection with an implicit transaction open they
    would all be savepoints of it and nothing would commit until the caller did.
    """
    if not conn.autocommit:
        raise ValueError("execute_run needs an autocommit connection (each page is its own transaction)")
    settings = load_settings(conn)
    claim_probe = rq.get_run(conn, id=run_id)
    if claim_probe is None:
        return RunOutcome(run_id, "skipped", detail="no such run")
    if not try_lane(conn, claim_probe.source_id):
        raise LaneBusy(f"source {claim_probe.source_id} lane is held")
    try:
        with conn.transaction():
            claim = rq.claim_run(
                conn,
                id=run_id,
                worker_id=worker_id,
                stale_after=settings.stale_run_after,
                grace=settings.takeover_grace,
            )
            if claim is None:
                return RunOutcome(run_id, "skipped", detail="run is terminal or held by a live worker")
            if claim.deliveries > settings.max_deliveries:
                detail = f"gave up: the run was delivered {claim.deliveries - 1} times without finishing"
                rq.fail_run(conn, id=run_id, error_detail=detail)
                return RunOutcome(run_id, "failed", detail="max deliveries")
        lease = RunLease(run_id, claim.deliveries, worker_id)
        beat_connection = heartbeat_connection or sibling_connection(conn)
        beats = Heartbeat(lease, beat_connection, beat_interval(settings.stale_run_after))
        run = _Run(conn, claim, settings, lease, beats, keyring, chunks, on_progress, max(0, prefetch), source_process)
        try:
            # Every statement of the run waits at most lock_wait_max for another session's lock (decision 159),
            # and a page's transaction left idle (its process paused) ends when another worker may take the run
            # over (decision 160); the connection's own limits come back after it, for what the caller runs next.
            idle = settings.stale_run_after + settings.takeover_grace
            with run_session_limits(conn, settings.lock_wait_max, idle), beats:
                return run.execute()
        except psycopg.OperationalError as exc:
            if conn.broken or conn.closed:
                raise ConnectionLost(lease) from exc
            raise
    finally:
        if not (conn.broken or conn.closed):
            release_lane(conn, claim_probe.source_id)


class _Run:
    def __init__(
        self,
        conn: psycopg.Connection[Any],
        claim: rq.ClaimRunRow,
        settings: PlatformSettings,
        lease: RunLease,
        beats: Heartbeat,
        keyring: Keyring,
        chunks: ChunkStage | None,
        on_progress: ProgressCallback | None,
        prefetch: int = 0,
        source_process: bool | None = False,
    ) -> None:
        self.conn = conn
        self.prefetch = prefetch
        self.source_process = source_process
        # The rate gate's connection when pages are fetched on the producer thread: the gate runs one
        # statement per request and must not land inside the consumer's open page transaction.
        self.gate_conn: psycopg.Connection[Any] | None = None
        # Maps, cuts and embeds each page's items ahead of its transaction (prefetch with a PreparingStage).
        self.embed_ahead: EmbedAhead | None = None
        # What the items of each page in hand stored when first handed to it (None: nothing stored), by page.
        self.stored_read: dict[int, dict[tuple[str, str], Stored | None]] = {}
        self.claim = claim
        self.settings = settings
        self.lease = lease
        self.beats = beats
        self.worker_id = lease.worker_id
        self.keyring = keyring
        self.chunks = chunks
        self.on_progress = on_progress
        saved = RunCheckpoint.from_json(claim.checkpoint)
        self.position: Mapping[str, Any] | None = saved.connector
        self.watermark = MovingWatermark(Watermark(saved.max_updated, frozenset(saved.boundary_ids)))
        self.complete: bool = saved.complete
        self.unread_containers: set[str] = set(saved.unread_containers)
        self.enumerated: int = saved.enumerated
        self.done = claim.entities_done or 0
        self.total = claim.entities_total
        self.errors = claim.error_count
        self.stats = CallStats(api_calls=claim.api_calls, rate_limited=claim.rate_limited)
        self.progress = Progress(claim.id, self.done, self.total, self.errors)
        self.started = time.monotonic()
        self.page_wait = 0.0  # RunOutcome.page_wait
        self.vector_wait = 0.0  # RunOutcome.vector_wait
        self.writer: WriteBehind[PageWrite] | None = None  # RunOutcome.write_wait: its ``waited``
        scope = claim.scope or {}
        self.scope_kind: str | None = scope.get("kind") if isinstance(scope, dict) else None
        self.scope = scope
        # Whole-source enumeration: the only runs that may resolve deletions, flags and the cursor.
        self.whole_source = self.scope_kind is None
        self.record_seen = self.whole_source and claim.mode in ("full", "reconciliation")
        # Items the previous incremental cursor already holds at its exact boundary (filled in execute).
        self.previous = Watermark()
        # Per-unit counts the source reports, asked after a reconciliation enumerated everything.
        self.audit_counts: Mapping[str, int | None] = {}

    # ------------------------------------------------------------------ main flow

    def execute(self) -> RunOutcome:
        source = sq.get_source(self.conn, id=self.claim.source_id)
        self.dlq_nonempty = bool(dq.source_has_dead_letters(self.conn, source_id=self.claim.source_id))
        assert source is not None  # FK: a run cannot outlive its source
        self.connector_type = source.connector_type
        log.info("run %s started", self.claim.id, extra={**self._fields(), "delivery": self.claim.deliveries})
        if self.whole_source and self.claim.mode == "incremental":
            self.previous = Watermark.from_cursor(source.incremental_cursor)
        try:
            spec = get_spec(source.connector_type)
            # The listing in a child process (decision 135) takes its rate budget on a connection of its own.
            # A manifest's listing_apart is for the runs that list everything: an incremental poll lists what
            # changed since its cursor, and a child would cost it more than it saves (decision 154).
            wanted = (
                spec.manifest.listing_apart and self.claim.mode != "incremental"
                if self.source_process is None
                else self.source_process
            )
            apart = wanted and self.prefetch > 0 and self._items() is None
            if self.prefetch and (not apart or isinstance(self.chunks, PreparingStage)):
                # The producer's connection: the rate gate of a listing on this process's read-ahead thread,
                # and the embedding stage's look-ups. A listing apart without that stage needs none
                # (decision 137: before, every such run opened one and left it idle).
                try:
                    self.gate_conn = sibling_connection(self.conn, "harvester-fetch")()
                    bound_lock_waits(self.gate_conn, self.settings.lock_wait_max)  # decision 159
                except psycopg.OperationalError as exc:
                    self._close_gate()
                    raise ConnectionLost(self.lease) from exc
            config = with_rate_budget(
                self.gate_conn or self.conn,
                self._scoped(source_config(source, self.keyring)),
                source.connector_type,
                self.settings,
                own_connection=self.gate_conn is not None or apart,
            )
            gate = config.rate_gate if isinstance(config.rate_gate, PgRateGate) else None
            if gate is not None:
                # A cancel or a takeover stops whatever sleeps in the gate (the source's pause) at the beat that
                # finds it, whichever thread sleeps there (decision 158).
                self.beats.when_lost(gate.stop)
            connector: Connector | SourceProcess
            if apart:
                # The listing in a child process (decision 135); its failures arrive with its first items.
                connector = SourceProcess(
                    source.connector_type,
                    config,
                    self.stats,
                    conninfo=conninfo_of(self.conn, "harvester-source"),
                    lock_wait_s=self.settings.lock_wait_max,
                    name=f"run-{self.claim.id}-source",
                )
            else:
                connector = spec.create(config, self.stats)
        except (KeyError, SourceError, HarvesterError) as exc:
            # Unknown connector, source down at start, or a credential no configured key decrypts.
            self._close_gate()
            return self._finish("failed", str(exc))
        if self.prefetch and isinstance(self.chunks, PreparingStage):
            # The embedding stage needs the producer's own connection for its look-ups (gate_conn).
            self.embed_ahead = EmbedAhead(self.chunks, spec.map_item, name=f"run-{self.claim.id}-embed")
        pages = self._pages(connector, source)
        ahead = Prefetch(pages, self.prefetch, name=f"run-{self.claim.id}-fetch") if self.prefetch else None
        try:
            with ExitStack() as stages:
                # Entered in this order, closed in reverse: the producer stops before the embedding thread.
                if self.embed_ahead is not None:
                    stages.enter_context(self.embed_ahead)
                if ahead is not None:
                    stages.enter_context(ahead)
                if gate is not None and not isinstance(connector, SourceProcess):
                    # A run that stops early lets no more of its listing's requests out before it waits for
                    # the listing's threads (the read-ahead, the fan-out): one sleeping through the source's
                    # pause would hold it until the pause ended (decision 158). Not on a normal end: the
                    # completeness audit still asks the source.
                    stages.push(_stop_gate_on_error(gate))
                if isinstance(connector, SourceProcess):
                    # Closed before the read-ahead: a run that stops early ends a child still listing, so the
                    # producer waiting on it stops at once instead of when the source answers.
                    stages.callback(connector.abort)
                # With read-ahead, each page is written on a writer thread while the next is mapped
                # (decision 122); entered last, so it is closed first: the write in flight ends before the
                # producer stops and before any failure handling uses the connection.
                writer = self.writer = (
                    stages.enter_context(
                        WriteBehind(self._write_page, self._rewind, name=f"run-{self.claim.id}-write", join=join_writes)
                    )
                    if self.prefetch
                    else None
                )
                for page in self._timed(ahead if ahead is not None else pages):
                    work = self._map_page(page, spec.map_item)
                    if writer is not None:
                        writer.submit(work)
                    else:
                        self._write_page(work)
                if writer is not None:
                    writer.drain()
            if self.record_seen and self.complete and self.claim.mode == "reconciliation":
                self.audit_counts = completeness.source_counts(self.conn, connector, self.claim.source_id)
            return self._resolve(source)
        except LeaseLost:
            # Taken over or cancelled: the new holder owns the run, its counters and its seen-set.
            return self._taken_over()
        except SourceError as exc:
            return self._finish("failed", str(exc))
        except HttpError as exc:
            # Retries ran out while enumerating: the source, not one item, is failing.
            return self._finish("failed", f"source kept failing: {exc.detail}"[:500])
        except EmbeddingError as exc:
            # Raised on the embedding thread or in a page's transaction: the pages before it are committed.
            return self._finish("failed", f"embedder failed: {exc}"[:500])
        except psycopg.errors.LockNotAvailable:
            # A wait for another session's lock ran out (decision 159): the page rolled back with its checkpoint;
            # the reason names who holds a lock that blocks writes, as far as the catalog still shows it.
            return self._finish("failed", lock_wait_detail(self.conn, self.settings.lock_wait_max)[:1000])
        except Exception as exc:
            if self.conn.broken or self.conn.closed or self._gate_lost(exc):
                # The database went away: the unit in flight rolled back, the checkpoint is intact.
                raise ConnectionLost(self.lease) from exc
            log.exception("run %s broke", self.claim.id)
            return self._finish("failed", f"internal error: {type(exc).__name__}: {exc}"[:500])
        finally:
            connector.close()
            self._close_gate()

    def _timed(self, pages: Iterable[Page]) -> Iterator[Page]:
        """``pages``, adding the time each took to arrive to ``page_wait``. While it waits for the read-ahead,
        the run's thread looks at the lease every ``LEASE_TICK`` s: a run cancelled or taken over while the source
        takes its time (a slow answer, a rate limit's wait) stops at the heartbeat's next beat, not after the
        source answers."""
        polled: Iterable[Page | None] = pages.polled(LEASE_TICK) if isinstance(pages, Prefetch) else pages
        asked = time.monotonic()
        for page in polled:
            if page is None:
                self._check_lease()
                continue
            self.page_wait += time.monotonic() - asked
            yield page
            asked = time.monotonic()
        self.page_wait += time.monotonic() - asked

    def _gate_lost(self, exc: Exception) -> bool:
        """The producer's rate-gate connection broke (the database went away under the fetch)."""
        if isinstance(exc, GateLost):  # the source process's own gate connection (decision 135)
            return True
        gate = self.gate_conn
        return isinstance(exc, psycopg.OperationalError) and gate is not None and (gate.broken or gate.closed)

    def _close_gate(self) -> None:
        if self.gate_conn is not None:
            self.gate_conn.close()
            self.gate_conn = None

    def _clear_seen(self) -> None:
        """A run that did not succeed leaves no seen-set behind (run_seen_items is per run). Only ever
        called inside a unit that holds the lease: a holder that lost it must not touch the set."""
        if self.record_seen:
            eq.clear_seen(self.conn, run_id=self.claim.id)

    def _scoped(self, config: SourceConfig) -> SourceConfig:
        # Previews serve the embedding stage alone (decision 138): without it a connector builds none.
        config = replace(config, previews=bool(self.prefetch) and isinstance(self.chunks, PreparingStage))
        if self.scope_kind == "containers":
            return replace(config, scope_mode="selected", scope_list=tuple(self.scope.get("containers", ())))
        return config

    def _items(self) -> list[tuple[SourceType, str]] | None:
        if self.scope_kind != "items":
            return None
        return [(i["source_type"], str(i["source_entity_id"])) for i in self.scope.get("items", [])]

    def _since(self, source: sq.GetSourceRow) -> datetime | None:
        if self.scope_kind == "window" and self.scope.get("since"):
            return datetime.fromisoformat(str(self.scope["since"]))
        if self.claim.mode != "incremental":
            return None  # full and reconciliation: since = epoch
        boundary = Watermark.from_cursor(source.incremental_cursor).updated
        if boundary is None:
            return None
        # ">=" the boundary (the watermark's ids say what to skip at it), widened by the look-back for
        # a source whose search index lags its writes; repeats before the boundary are idempotent.
        return boundary - timedelta(seconds=self.settings.incremental_lookback)

    def _pages(self, connector: Connector | SourceProcess, source: sq.GetSourceRow) -> Iterator[Page]:
        """Pages to commit, each with the connector position after it.

        Only a connector's own Checkpoint ends a page: the page is already in memory as one API response,
        and committing rows without a position would make a resumed run count them twice. The items after
        the last checkpoint are committed together with the "complete" mark.

        Everything the generator needs is read here, before it starts: it may run on the producer thread
        (:class:`Prefetch`) while the consumer advances the run's fields, and it changes none of them.
        """
        if self.complete:
            return iter(())
        items = self._items()
        if items is not None:
            fetched = int((self.position or {}).get("fetched", 0))
            self.total = len(items)
            if fetched >= len(items):
                self.complete = True  # nothing (left) to fetch: no page, the resolution follows
                return iter(())
            assert not isinstance(connector, SourceProcess)  # named items are fetched in this process
            return self._item_pages(connector, items, fetched)
        return self._enumerated_pages(connector, self._since(source), self.position, self.total)

    def _item_pages(self, connector: Connector, items: list[tuple[SourceType, str]], fetched: int) -> Iterator[Page]:
        for number, start in enumerate(range(fetched, len(items), ITEMS_PER_PAGE)):
            chunk = items[start : start + ITEMS_PER_PAGE]
            fetched += len(chunk)
            got = list(connector.fetch(chunk))
            raw = [i for i in got if isinstance(i, RawItem)] if self.embed_ahead is not None else []
            futures = [self._embed_ahead(number, raw[g : g + GROUP]) for g in range(0, len(raw), GROUP)]
            yield self._page(got, {"fetched": fetched}, len(items), fetched == len(items), futures)

    def _enumerated_pages(
        self,
        connector: Connector | SourceProcess,
        since: datetime | None,
        position: Mapping[str, Any] | None,
        total: int | None,
    ) -> Iterator[Page]:
        emitted: Iterator[Emitted] = connector.enumerate(since, position)
        # With the embedding stage the connector runs on a thread of its own, a few items ahead (decision 132):
        # while it waits on the source, this thread still hands a waiting group to an embedding thread that
        # has nothing to do, instead of holding it until the next item comes.
        pump = None
        if self.embed_ahead is not None:
            pump = Prefetch(emitted, SOURCE_AHEAD, name=f"run-{self.claim.id}-source")
        try:
            with pump if pump is not None else nullcontext():
                yield from self._emitted_pages(pump.polled(TICK) if pump is not None else emitted, total)
        finally:
            if pump is None:
                # Closed here, on the thread that iterates it, whatever ended the pages: an error raised in
                # _emitted_pages (a lost lease) leaves the connector's stream suspended, held by the error's
                # traceback, with its listing's request asked ahead; closed later by the collector on a
                # fan-out thread, it hung the run (decision 157). The pump closes it on its own thread.
                close = getattr(emitted, "close", None)
                if close is not None:
                    close()

    def _emitted_pages(self, emitted: Iterator[Emitted | None], total: int | None) -> Iterator[Page]:
        """The pages of what the connector emits; ``None`` in ``emitted``: nothing came for ``TICK`` s."""
        buf: list[RawItem | ItemError | ItemGone] = []
        # With the embedding stage: the page's raw items not yet handed over, and its groups' futures.
        group: list[RawItem] = []
        group_since = 0.0  # when the group's first item came
        futures: list[Future[Prepared]] = []
        number = 0
        for item in emitted:
            if item is None:
                # What came a while ago goes to an embedding thread that has nothing to do.
                if group and self._early(group_since):
                    futures.append(self._embed_ahead(number, group))
                    group = []
                self._check_lease()
                continue
            if isinstance(item, Checkpoint):
                if item.total is not None:
                    total = item.total
                if group:
                    futures.append(self._embed_ahead(number, group))
                yield self._page(buf, dict(item.position), total, False, futures)
                buf, group, futures, number = [], [], [], number + 1
            elif isinstance(item, Preview):
                # Items whose rights are still being read (decision 107), or the next page's, announced while
                # this page's items wait on the source (decision 138): their text is embedded now, and the
                # page's own groups, queued behind, find those vectors (content-addressed, per page).
                # Their futures are dropped: nothing of a preview is loaded, and whatever failed here the
                # page's own groups do again and raise.
                if self.embed_ahead is not None:
                    ahead = number + item.ahead
                    self._read_stored(ahead, item.items)  # the page's, at once
                    for g in range(0, len(item.items), GROUP):
                        self._embed_ahead(ahead, list(item.items[g : g + GROUP]), solo=ahead != number)
            else:
                buf.append(item)
                if self.embed_ahead is not None and isinstance(item, RawItem):
                    if not group:
                        group_since = time.monotonic()
                    group.append(item)
                    # A whole group, or what came in a while if the embedding thread has nothing to do.
                    if len(group) >= GROUP or self._early(group_since):
                        futures.append(self._embed_ahead(number, group))
                        group = []
            self._check_lease()
        if group:
            futures.append(self._embed_ahead(number, group))
        yield self._page(buf, None, total, True, futures)

    def _early(self, group_since: float) -> bool:
        """A group that came ``EARLY_AFTER`` s ago or more goes now if the embedding thread is idle."""
        assert self.embed_ahead is not None
        return self.embed_ahead.idle and time.monotonic() - group_since >= EARLY_AFTER

    def _page(
        self,
        items: list[RawItem | ItemError | ItemGone],
        position: Mapping[str, Any] | None,
        total: int | None,
        complete: bool,
        ahead: Sequence[Future[Prepared]] = (),
    ) -> Page:
        return Page(items, position, total, complete, self.stats.api_calls, self.stats.rate_limited, tuple(ahead))

    def _embed_ahead(self, number: int, items: list[RawItem], *, solo: bool = False) -> Future[Prepared]:
        """Hand ``items`` of page ``number`` to the embedding thread with what they store now, read on the
        producer's connection (the run's own may be inside a page transaction). Producer thread only."""
        assert self.embed_ahead is not None
        known = self._read_stored(number, items)
        stored: dict[tuple[str, str], Stored] = {}
        for i in items:
            if (s := known[(i.source_type, i.source_entity_id)]) is not None:
                stored[(i.source_type, i.source_entity_id)] = s
        return self.embed_ahead.submit(number, items, stored, solo=solo)

    def _read_stored(self, number: int, items: Sequence[RawItem]) -> Mapping[tuple[str, str], Stored | None]:
        """What the items of page ``number`` store, read once per item and page: a page's items announced
        by a Preview come again as its own items, and the producer that reads is the side a fetch-bound run
        waits for (decision 126). Producer thread only."""
        assert self.gate_conn is not None
        known = of_page(self.stored_read, number)
        wanted = {(i.source_type, i.source_entity_id) for i in items} - known.keys()
        if wanted:
            rows = [{"source_type": t, "source_entity_id": sid} for t, sid in wanted]
            found: dict[tuple[str, str], Stored] = {}
            for r in cq.list_stored_hashes_by_identity(self.gate_conn, rows=rows, source_id=self.claim.source_id):
                entry = found.setdefault((r.source_type, r.source_entity_id), Stored(r.entity_hash, r.deleted))
                if r.chunk_hash is not None:
                    entry.chunks.append((r.chunk_hash, r.embedding_model))
            known.update((identity, found.get(identity)) for identity in wanted)
        return known

    def _prepared(self, page: Page) -> tuple[list[Entity | MalformedPayload], Ready] | None:
        """The page's items as the embedding thread mapped them and its ready vectors, once all of its
        groups are done (None: the page was not prepared ahead). Raises what a group raised."""
        if not page.ahead:
            return None
        mapped: list[Entity | MalformedPayload] = []
        ready = Ready()
        asked = time.monotonic()
        for future in page.ahead:
            while True:
                try:
                    done = future.result(timeout=0.2)
                    break
                except TimeoutError:
                    self._check_lease()  # a stalled embedder must not outlive the lease unnoticed
            mapped.extend(done.mapped)
            ready.merge(done.ready)
        self.vector_wait += time.monotonic() - asked
        return mapped, ready

    def _check_lease(self) -> None:
        """Stop fetching early once the heartbeat found the lease gone (the next unit would refuse anyway)."""
        if self.beats.lost.is_set():
            raise LeaseLost(f"run {self.claim.id} was taken over or cancelled")

    def _map_page(self, page: Page, map_item: Callable[[RawItem], Entity]) -> PageWrite:
        """Map one page and advance the run's counters, watermark and position past it: what
        :meth:`_write_page` commits, with the checkpoint and counters as of this page."""
        self._check_lease()
        prepared = self._prepared(page)
        ready = prepared[1] if prepared is not None else None
        ahead = iter(prepared[0]) if prepared is not None else None
        position = page.position
        if page.total is not None:
            self.total = page.total
        self.complete = page.complete
        batch = Batch()
        items: list[RawItem | ItemError | ItemGone] = []
        seen: list[tuple[str, datetime | None]] = []  # the page's watermark, advanced once (decision 125)
        for item in page.items:
            if isinstance(item, RawItem):
                mapped = next(ahead) if ahead is not None else None  # one per raw item, in order
                if self.previous.already_seen(item.source_entity_id, item.source_updated_at):
                    continue  # taken by the previous run at exactly its boundary and unchanged since (watermark)
                seen.append((item.source_entity_id, item.source_updated_at))
                try:
                    batch.entities.append(map_item(item) if mapped is None else _entity(mapped))
                except MalformedPayload as exc:
                    batch.errors.append(ItemError(item.source_type, item.source_entity_id, "malformed", str(exc)))
            elif isinstance(item, ItemError):
                batch.errors.append(item)
                if item.container is not None:
                    self.unread_containers.add(item.container)
            else:
                batch.gone.append((item.source_type, item.source_entity_id))
            items.append(item)
        self.watermark.advance_all(seen)
        self.done += len(items)
        self.enumerated += len(items)
        self.errors += len(batch.errors)
        if position is not None:
            self.position = position
        return PageWrite(
            batch=batch,
            ready=ready,
            checkpoint=self._checkpoint().to_json(),
            done=self.done,
            total=self.total,
            errors=self.errors,
            api_calls=page.api_calls,
            rate_limited=page.rate_limited,
            stopped_at=(self.done, self.total, self.errors),
        )

    def _write_page(self, work: PageWrite) -> None:
        """Load one mapped page with its checkpoint and counters in one transaction that first holds the
        lease. Raises :class:`LeaseLost` when the run is no longer ours; nothing of the page is kept then.
        Runs on the writer thread when pages are read ahead (decision 122): it reads nothing the run's
        thread changes while it maps the next page, only ``work`` and what only writes change."""
        with self.conn.transaction():
            self.lease.hold(self.conn)
            load_batch(
                self.conn,
                source_id=self.claim.source_id,
                run_id=self.claim.id,
                batch=work.batch,
                record_seen=self.record_seen,
                clear_dead_letters=self.dlq_nonempty,
                chunks=self.chunks,
                ready=work.ready,
            )
            saved = rq.save_progress(
                self.conn,
                id=self.claim.id,
                generation=self.lease.generation,
                worker_id=self.worker_id,
                checkpoint=work.checkpoint,
                entities_done=work.done,
                entities_total=max(work.total, work.done) if work.total is not None else None,
                error_count=work.errors,
                api_calls=work.api_calls,
                rate_limited=work.rate_limited,
            )
            if saved == 0:  # cannot happen under the row lock; kept as the statement's own fence
                raise LeaseLost(f"run {self.claim.id}: progress matched no row")
        self.dlq_nonempty = self.dlq_nonempty or bool(work.batch.errors)
        if self.on_progress:
            self.progress.done, self.progress.total, self.progress.errors = work.done, work.total, work.errors
            self.on_progress(self.progress)

    def _rewind(self, work: PageWrite) -> None:
        """The write of ``work`` failed: the run's counters go back to its first page's, as if the run had
        stopped there (the sequential loop would not have mapped the next page; decision 144)."""
        self.done, self.total, self.errors = work.stopped_at

    def _checkpoint(self) -> RunCheckpoint:
        # Scope units the connector found unreadable (CallStats.unread) are kept like unread containers.
        self.unread_containers |= self.stats.unread
        return RunCheckpoint(
            connector=self.position,
            max_updated=self.watermark.updated,
            boundary_ids=self.watermark.ids,
            enumerated=self.enumerated,
            complete=self.complete,
            unread_containers=frozenset(self.unread_containers),
        )

    # ------------------------------------------------------------------ end of run

    def _resolve(self, source: sq.GetSourceRow) -> RunOutcome:
        """Deletions, flags, the cursor and the run's end: one transaction, kept only if the run is still ours."""
        with self.conn.transaction():
            self.lease.hold(self.conn)  # raises LeaseLost: none of the resolution is ours to do
            detail, deleted = self._resolve_in_transaction(source)
            if not self._record_finish("succeeded", detail):
                raise LeaseLost(f"run {self.claim.id}: finish matched no row")
        self._ended("succeeded", detail)
        return self._outcome("succeeded", detail, deleted)

    def _resolve_in_transaction(self, source: sq.GetSourceRow) -> tuple[str | None, int]:
        detail: str | None = None
        deleted = 0
        run_id, source_id = self.claim.id, self.claim.source_id
        if self.record_seen and self.complete and self.enumerated > 0:
            self.unread_containers |= self.stats.unread
            if self.claim.mode == "reconciliation":
                # Collapse first: a duplicate the source no longer lists must merge, not just vanish.
                eq.collapse_duplicates(self.conn, source_id=source_id, run_id=run_id)
                unread = sorted(self.unread_containers)
                counts = eq.count_unseen(self.conn, run_id=run_id, source_id=source_id, unread_containers=unread)
                assert counts is not None
                share = counts.unseen / counts.live if counts.live else 0.0
                confirmed = bool((self.claim.options or {}).get("confirm_mass_delete"))
                if ANY_CONTAINER in self.unread_containers:
                    # A scope unit the connector could not tie to a container was unreadable: any entity
                    # might be one of its own, so nothing is deleted (issue 12, bad input).
                    detail = "a scope unit could not be read: nothing was deleted"
                elif share > self.settings.mass_delete_share and not confirmed:
                    detail = (
                        f"mass-deletion guard: {counts.unseen} of {counts.live} live entities "
                        f"({share:.0%}) were not seen, more than {self.settings.mass_delete_share:.0%}; nothing "
                        "was deleted. Confirm with a manual reconciliation run with confirm_mass_delete."
                    )
                else:
                    deleted = eq.soft_delete_unseen(
                        self.conn, source_id=source_id, run_id=run_id, unread_containers=unread
                    )
            elif self.claim.mode == "full" and self.stats.unread:
                # Items of a scope unit the run could not read were not seen: they keep their flags.
                detail = "a scope unit could not be read: neighbour flags were left as they were"
            elif self.claim.mode == "full":
                eq.flag_unseen_as_neighbours(self.conn, source_id=source_id, run_id=run_id)
        elif self.record_seen and self.enumerated == 0:
            detail = "the source listed no items: nothing was deleted or re-flagged"
        if self.record_seen:
            eq.clear_seen(self.conn, run_id=run_id)
        finding = completeness.record(
            self.conn,
            run_id=run_id,
            source_id=source_id,
            counts=self.audit_counts,
            tolerance=self.settings.completeness_tolerance,
        )
        if finding:
            detail = f"{detail} {finding}" if detail else finding
        if self.whole_source and self.complete:
            # The watermark only moves forward; a run that saw nothing newer keeps the previous one.
            previous = Watermark.from_cursor(source.incremental_cursor)
            mark = previous.advance_all((i, self.watermark.updated) for i in self.watermark.ids)
            cursor = mark.to_cursor()
            if cursor is not None:
                sq.set_incremental_cursor(self.conn, id=source_id, cursor=cursor)
        return detail, deleted

    def _finish(self, state: str, detail: str | None) -> RunOutcome:
        try:
            with self.conn.transaction():
                self.lease.hold(self.conn)
                self._clear_seen()
                if not self._record_finish(state, detail):
                    raise LeaseLost(f"run {self.claim.id}: finish matched no row")
        except LeaseLost:
            return self._taken_over()
        self._ended(state, detail)
        return self._outcome(state, detail)

    def _taken_over(self) -> RunOutcome:
        log.info("run %s cancelled or taken over", self.claim.id, extra=self._fields())
        if self.record_seen and not (self.conn.broken or self.conn.closed):
            # A cancelled run leaves no seen-set behind; a run taken over keeps the one its holder fills.
            eq.clear_seen_of_ended_run(self.conn, run_id=self.claim.id)
        return RunOutcome(self.claim.id, "cancelled", self.done, self.errors, "run was cancelled or taken over")

    def _record_finish(self, state: str, detail: str | None) -> bool:
        """FinishRun in the open transaction; False when the run is no longer this worker's."""
        detail = _with_notes(detail, self.stats.notes, self.stats.more_notes)
        n = rq.finish_run(
            self.conn,
            id=self.claim.id,
            generation=self.lease.generation,
            worker_id=self.worker_id,
            state=state,
            error_detail=detail,
            entities_done=self.done,
            entities_total=max(self.total, self.done) if self.total is not None else self.done,
            error_count=self.errors,
            api_calls=self.stats.api_calls,
            rate_limited=self.stats.rate_limited,
        )
        return n > 0

    def _ended(self, state: str, detail: str | None) -> None:
        """Log the committed end of the run, with what its thread waited for (the source's pages, the
        embedder's vectors, the writer thread: the rest of ``duration_s`` is its own mapping, and, with
        read-ahead off, its load and commits); a failure also raises its alert (seed 000)."""
        extra = {
            **self._fields(),
            "page_wait_s": round(self.page_wait, 3),
            "vector_wait_s": round(self.vector_wait, 3),
            "write_wait_s": round(self._write_wait(), 3),
            "write_joined": self._write_joined(),
            "state": state,
        }
        if state == "failed":
            log.error("run %s failed: %s", self.claim.id, detail, extra=extra)
            self._alert_failed()
        else:
            log.info("run %s ended %s", self.claim.id, state, extra={**extra, "detail": detail})

    def _outcome(self, state: str, detail: str | None, deleted: int = 0) -> RunOutcome:
        """The outcome of a run that ended here, with what its thread waited for."""
        return RunOutcome(
            self.claim.id,
            state,
            self.done,
            self.errors,
            detail,
            deleted,
            self.page_wait,
            self.vector_wait,
            self._write_wait(),
            self._write_joined(),
        )

    def _write_wait(self) -> float:
        return self.writer.waited if self.writer is not None else 0.0

    def _write_joined(self) -> int:
        return self.writer.joined if self.writer is not None else 0

    def _fields(self) -> dict[str, Any]:
        """What every run log line carries (issue 10 §3)."""
        return {
            "run_id": self.claim.id,
            "source_id": self.claim.source_id,
            "connector": getattr(self, "connector_type", None),
            "mode": self.claim.mode,
            "entities_done": self.done,
            "entities_total": self.total,
            "error_count": self.errors,
            "api_calls": self.stats.api_calls,
            "duration_s": round(time.monotonic() - self.started, 3),
        }

    def _alert_failed(self) -> None:
        """Seed 000: a failed run raises a notification (app/services/alerts.py). The run's end is
        committed already; an alert that cannot be queued is logged and left to the tick's evaluation."""
        from app.services.alerts import notify_run_failed

        try:
            with self.conn.transaction():
                notify_run_failed(self.conn, self.claim.id)
        except psycopg.Error as exc:
            log.error("run %s: failure alert not queued: %s", self.claim.id, exc, extra=self._fields())


def _entity(mapped: Entity | MalformedPayload) -> Entity:
    if isinstance(mapped, MalformedPayload):
        raise mapped
    return mapped


def _stop_gate_on_error(gate: PgRateGate) -> Callable[[type[BaseException] | None, object, object], None]:
    def stop(kind: type[BaseException] | None, _error: object, _tb: object) -> None:
        if kind is not None:
            gate.stop()

    return stop


def _with_notes(detail: str | None, notes: list[str], more: int = 0) -> str | None:
    """The run's detail followed by the connector's notes (CallStats.notes), bounded in length; how many
    notes were not kept (CallStats.more_notes) always survives the cut."""
    if not notes:
        return detail
    text = "; ".join([*([detail] if detail else []), *(f"note: {n}" for n in notes)])
    tail = f"; and {more} more notes" if more else ""
    room = 2000 - len(tail)
    return (text if len(text) <= room else text[: room - 3] + "...") + tail
