"""Worker side of webhooks: turn an accepted delivery into an items-scoped incremental run.

``apply_webhook`` starts the run (trigger ``webhook``, scope ``{"kind": "items", ...}``) and defers
``run_sync`` in the same transaction, so the run never commits without the job that runs it. When the
source already has a queued or running run, the job raises :class:`SourceBusy`
and Procrastinate retries it later, so no change is lost to the one-active-run rule. Deleted items are
fetched like the others: the connector answers ItemGone and the loader soft-deletes them.
"""

from __future__ import annotations

import logging

import procrastinate
from procrastinate import RetryStrategy

from app.db.connect import connect
from app.jobs.common import PERIODIC_QUEUE, QUEUE, db_url
from app.queries import sources as sq
from app.queries import webhooks as wq
from app.services.jobs import start_and_defer
from app.services.sources import RunConflict

log = logging.getLogger(__name__)

blueprint = procrastinate.Blueprint()


class SourceBusy(Exception):
    """The source has an active run; the webhook's run is started by a later attempt."""


def scope_items(upserts: list[list[str]], deletes: list[list[str]]) -> list[dict[str, str]]:
    seen: dict[tuple[str, str], None] = {}
    for source_type, source_entity_id in [*upserts, *deletes]:
        seen[(str(source_type), str(source_entity_id))] = None
    return [{"source_type": t, "source_entity_id": i} for t, i in seen]


@blueprint.task(
    name="apply_webhook",
    queue=QUEUE,
    retry=RetryStrategy(max_attempts=10_000, wait=10, retry_exceptions={SourceBusy}),
)
def apply_webhook(source_id: int, upserts: list[list[str]], deletes: list[list[str]]) -> int | None:
    items = scope_items(upserts, deletes)
    if not items:
        return None
    with connect(db_url()) as conn:
        source = sq.get_source(conn, id=source_id)
        if source is None or source.state != "active":
            conn.rollback()
            log.info("webhook for source %s dropped: the source is gone or not active", source_id)
            return None
        try:
            run_id = start_and_defer(
                conn, source_id, mode="incremental", trigger="webhook", scope={"kind": "items", "items": items}
            )
        except RunConflict as exc:
            conn.rollback()
            raise SourceBusy(f"source {source_id} has active run {exc.active_run_id}") from None
        conn.commit()
    return run_id


@blueprint.task(name="prune_webhook_deliveries", queue=PERIODIC_QUEUE, queueing_lock="prune_webhook_deliveries")
def prune_webhook_deliveries(timestamp: int) -> int:
    """Every 10 minutes (app.jobs.build_app): forget delivery ids past their TTL (the table is unlogged
    and only a dedupe window)."""
    with connect(db_url()) as conn:
        removed = wq.prune_deliveries(conn)
        conn.commit()
    return removed
