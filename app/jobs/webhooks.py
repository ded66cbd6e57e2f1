"""Worker side of webhooks: turn a source's pending webhook items into one items-scoped incremental run.

Accepted deliveries add their items to the source's pending set (``webhook_pending``, decision 145) and
defer ``apply_webhook`` unless a job already waits for the source. ``apply_webhook`` takes the whole set
(at most ``MAX_RUN_ITEMS``) and starts one run (trigger ``webhook``, scope ``{"kind": "items", ...}``),
deferring ``run_sync`` in the same transaction, so the run never commits without the job that runs it and
the items never leave the set without the run that takes them. When the source already has a queued or
running run, the job raises :class:`SourceBusy`, the set stays as it is (it keeps growing with later
deliveries) and Procrastinate retries the job; when a run ends with items pending,
:func:`defer_pending_after` defers a job for them at once. Deleted items are fetched like the others: the
connector answers ItemGone and the loader soft-deletes them.
"""

from __future__ import annotations

import logging

import procrastinate
from procrastinate import RetryStrategy

from app.db.connect import connect
from app.jobs.common import PERIODIC_QUEUE, QUEUE, db_url
from app.queries import runs as rq
from app.queries import sources as sq
from app.queries import webhooks as wq
from app.services.jobs import APPLY_WEBHOOK, defer_in, start_and_defer
from app.services.sources import RunConflict
from app.services.webhooks import PENDING_LOCK_CLASS, scope_items, take_pending

log = logging.getLogger(__name__)

blueprint = procrastinate.Blueprint()

# Seconds before a job that found its source busy asks again. Its items are safe in the pending set
# meanwhile, and a run that ends with items pending defers a job for them at once (defer_pending_after).
BUSY_RETRY_WAIT = 10


class SourceBusy(Exception):
    """The source has an active run; the pending items are taken by a later attempt."""


@blueprint.task(
    name="apply_webhook",
    queue=QUEUE,
    retry=RetryStrategy(max_attempts=10_000, wait=BUSY_RETRY_WAIT, retry_exceptions={SourceBusy}),
)
def apply_webhook(
    source_id: int, upserts: list[list[str]] | None = None, deletes: list[list[str]] | None = None
) -> int | None:
    """Start one run of everything the source has pending; None when nothing is (an earlier job took it)
    or the source is gone or not active (its pending items are dropped, as its webhooks are refused).

    ``upserts`` / ``deletes``: the items a job deferred before decision 145 carries; they join the set first."""
    with connect(db_url()) as conn:
        source = sq.get_source(conn, id=source_id)
        if source is None or source.state != "active":
            wq.lock_webhook_pending(conn, lock_class=PENDING_LOCK_CLASS, source_id=source_id)
            dropped = wq.drop_webhook_pending(conn, source_id=source_id)
            conn.commit()
            log.info("webhook items for source %s dropped (%s): the source is gone or not active", source_id, dropped)
            return None
        if upserts or deletes:
            wq.lock_webhook_pending(conn, lock_class=PENDING_LOCK_CLASS, source_id=source_id)
            wq.add_webhook_pending(conn, source_id=source_id, items=scope_items(upserts or [], deletes or []))
        items = take_pending(conn, source_id)
        if not items:
            conn.rollback()
            log.info("source %s: no webhook items pending (an earlier job took them)", source_id)
            return None
        try:
            run_id = start_and_defer(
                conn, source_id, mode="incremental", trigger="webhook", scope={"kind": "items", "items": items}
            )
        except RunConflict as exc:
            conn.rollback()
            raise SourceBusy(f"source {source_id} has active run {exc.active_run_id}") from None
        # More than one run's worth was pending: a job for the rest (it waits for this run, then takes it).
        rest = wq.webhook_pending_exists(conn, source_id=source_id)
        if rest and not wq.webhook_job_waiting(conn, source_id=source_id):
            defer_in(conn, APPLY_WEBHOOK, source_id=source_id)
        conn.commit()
    log.info("source %s: webhook run %s takes %d pending items", source_id, run_id, len(items))
    return run_id


def defer_pending_after(run_id: int) -> bool:
    """``run_id`` ended: when its source has webhook items pending, defer apply_webhook for them now rather
    than leave them to the retry of the job that found the source busy (up to BUSY_RETRY_WAIT seconds
    later). That job, when it comes, finds the set taken and ends. True when a job was deferred."""
    with connect(db_url()) as conn:
        run = rq.get_run(conn, id=run_id)
        if run is None:
            return False
        wq.lock_webhook_pending(conn, lock_class=PENDING_LOCK_CLASS, source_id=run.source_id)
        pending = bool(wq.webhook_pending_exists(conn, source_id=run.source_id))
        if pending:
            defer_in(conn, APPLY_WEBHOOK, source_id=run.source_id)
        conn.commit()
    return pending


@blueprint.task(name="prune_webhook_deliveries", queue=PERIODIC_QUEUE, queueing_lock="prune_webhook_deliveries")
def prune_webhook_deliveries(timestamp: int) -> int:
    """Every 10 minutes (app.jobs.build_app): forget delivery ids past their TTL (the table is unlogged
    and only a dedupe window)."""
    with connect(db_url()) as conn:
        removed = wq.prune_deliveries(conn)
        conn.commit()
    return removed
