"""Dead letters (seed 000 §3): the failed-items review, its live summary and the retry run."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import psycopg
from litestar import Controller, Response, get, post
from litestar.params import Parameter

from app.api import schemas as s
from app.api.db import Database
from app.api.pagination import DEFAULT_LIMIT, Cursor, Limit, decode_cursor, next_cursor
from app.api.params import SourceId
from app.api.problems import ProblemError, accepted, not_found, problem_responses
from app.api.runs import _one_run, active_source
from app.api.views import scrubber
from app.queries import dead_letters as dq
from app.queries import sources as sq
from app.secrets import Keyring
from app.services.jobs import start_and_defer

R = problem_responses
Reason = Literal["permission", "not_found", "malformed", "rate_limited", "unknown"]


def dead_letters_page(
    conn: psycopg.Connection[Any],
    keyring: Keyring,
    source_id: int,
    reason: str | None,
    source_type: str | None,
    cursor: str | None,
    limit: int,
) -> s.DeadLetterPage:
    """One page of a source's unresolved dead letters, oldest first (keyset on id); the API and the CLI."""
    after_id = decode_cursor("dead-letters", cursor)
    rows = dq.list_dead_letters(
        conn, source_id=source_id, reason=reason, source_type=source_type, after_id=after_id, lim=limit + 1
    )
    scrub = scrubber(conn, keyring, source_id)
    items = [
        s.DeadLetterOut(
            r.id,
            r.source_id,
            r.run_id,
            r.source_type,
            r.source_entity_id,
            r.reason,
            scrub(r.error_detail),
            r.attempts,
            r.created_at,
            r.updated_at,
        )
        for r in rows[:limit]
    ]
    return s.DeadLetterPage(items=items, next_cursor=next_cursor("dead-letters", [r.id for r in rows], limit))


class DeadLettersController(Controller):
    path = "/sources/{source_id:int}/dead-letters"
    tags = ("dead letters",)

    @get("/", operation_id="listDeadLetters", sync_to_thread=True, responses=R(400, 401, 404, 422))
    def list_dead_letters(
        self,
        source_id: SourceId,
        db: Database,
        keyring: Keyring,
        reason: Annotated[Reason | None, Parameter(description="only items that failed for this reason")] = None,
        source_type: Annotated[
            str | None, Parameter(min_length=1, max_length=50, description="only items of this source type")
        ] = None,
        cursor: Cursor = None,
        limit: Limit = DEFAULT_LIMIT,
    ) -> s.DeadLetterPage:
        """Unresolved failed items of a source, oldest first, optionally of one reason or source type."""
        with db.tx() as conn:
            if sq.get_source(conn, id=source_id) is None:
                raise not_found(f"source {source_id}")
            return dead_letters_page(conn, keyring, source_id, reason, source_type, cursor, limit)

    @get("/summary", operation_id="summarizeDeadLetters", sync_to_thread=True, responses=R(400, 401, 404, 422))
    def summary(self, source_id: SourceId, db: Database) -> s.DeadLetterSummaryOut:
        """Live DLQ depth by reason: kept exact by triggers on the queue (decision 85), unlike a run's
        error_count, which is a snapshot."""
        with db.tx() as conn:
            if sq.get_source(conn, id=source_id) is None:
                raise not_found(f"source {source_id}")
            rows = dq.summarize_dead_letters(conn, source_id=source_id)
        by_reason = {r.reason: int(r.items) for r in rows}
        return s.DeadLetterSummaryOut(source_id=source_id, total=sum(by_reason.values()), by_reason=by_reason)

    @post(
        "/retry",
        operation_id="retryDeadLetters",
        sync_to_thread=True,
        status_code=202,
        responses=R(400, 401, 403, 404, 409, 422),
    )
    def retry(self, source_id: SourceId, db: Database, keyring: Keyring) -> Response[s.RunOut]:
        """Start the DLQ-retry run: the queue's items, fetched by id (trigger manual, history type dlq_retry).

        ``Location`` names the new run.
        """
        with db.tx() as conn:
            active_source(conn, source_id)
            items = [
                {"source_type": r.source_type, "source_entity_id": r.source_entity_id}
                for r in dq.list_dead_letter_identities(conn, source_id=source_id)
            ]
            if not items:
                raise ProblemError(409, "dead-letters-empty", "the source has no dead letters to retry")
            run_id = start_and_defer(
                conn, source_id, mode="incremental", trigger="manual", scope={"kind": "items", "items": items}
            )
            conn.commit()
            return accepted(_one_run(conn, keyring, run_id), f"/runs/{run_id}")
