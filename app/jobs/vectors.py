"""Worker jobs of the vector projection: the background re-embed after a model change (issue 5).

``reembed_check`` runs every 10 minutes on the periodic queue: one grouped count over
entity_chunks (index entity_chunks_model_idx); when chunks of another model exist it defers
``reembed``, whose queueing lock keeps at most one waiting in the queue. ``reembed`` itself runs on
the sync queue: it can take long and must not hold up the minute tick.
"""

from __future__ import annotations

import contextlib
import logging

import procrastinate
from procrastinate import exceptions

from app.config import load_config
from app.db.connect import connect
from app.jobs.common import PERIODIC_QUEUE, QUEUE, db_url
from app.vector.config import process_embedder, require_embedder
from app.vector.reembed import reembed as run_reembed
from app.vector.reembed import stale_chunks

log = logging.getLogger(__name__)

blueprint = procrastinate.Blueprint()


@blueprint.task(name="reembed", queue=QUEUE, queueing_lock="reembed")
def reembed() -> int:
    """Re-embed every chunk whose model differs from the configured embedder's; returns chunks replaced."""
    config = load_config()
    embedder = require_embedder(config.embedder)
    with connect(db_url(), autocommit=True) as conn:  # one transaction per batch
        result = run_reembed(conn, embedder)
    log.info("re-embed to %s done: %d replaced, %d skipped", result.model, result.replaced, result.skipped)
    return result.replaced


@blueprint.task(name="reembed_check", queue=PERIODIC_QUEUE, queueing_lock="reembed_check")
def reembed_check(timestamp: int) -> int:
    """Every 10 minutes (app.jobs.build_app): detect a model change (chunks whose model is not the
    configured one) and queue ``reembed``."""
    config = load_config()
    embedder = process_embedder(config.embedder)
    if embedder is None:
        return 0
    with connect(db_url()) as conn:
        stale = stale_chunks(conn, embedder.model_name)
        conn.commit()
    if stale:
        log.info("%d chunks were embedded by another model than %s: queueing a re-embed", stale, embedder.model_name)
        # AlreadyEnqueued: one is already waiting; it will take these chunks too.
        with contextlib.suppress(exceptions.AlreadyEnqueued):
            reembed.defer()
    return stale
