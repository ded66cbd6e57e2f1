"""Sources (seed 000 §1): create, list, read, patch, delete, connect."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from litestar import Controller, Response, delete, get, patch, post
from litestar.params import Parameter, QueryParameter

from app.api import schemas as s
from app.api.db import Database
from app.api.pagination import DEFAULT_LIMIT, Cursor, Limit, decode_cursor, next_cursor
from app.api.params import SourceId
from app.api.problems import ProblemError, created, not_found, problem_responses
from app.api.views import schedules, source_out
from app.queries import runs as rq
from app.queries import sources as sq
from app.secrets import Keyring
from app.services.connectors import probe
from app.services.jobs import start_and_defer
from app.services.settings import window_to_minutes
from app.services.sources import NewSource, RunConflict, create_source, update_source

R = problem_responses
ConnectorType = Annotated[
    str | None, Parameter(min_length=1, max_length=50, description="only sources of this connector")
]


def read_source(db: Database, keyring: Keyring, source_id: int) -> s.SourceOut:
    with db.tx() as conn:
        rows = sq.list_source_details(conn, id=source_id)
        schedule_of = schedules(conn)
    if not rows:
        raise not_found(f"source {source_id}")
    return source_out(keyring, rows[0], schedule_of)


def window_minutes(window: s.WindowIn | None) -> int | None:
    """The API's ``{day, time}`` as the minute of week ``sources.reconcile_window`` stores."""
    return None if window is None else window_to_minutes({"day": window.day, "time": window.time})


class SourcesController(Controller):
    path = "/sources"
    tags = ("sources",)

    @get("/", operation_id="listSources", sync_to_thread=True, responses=R(401, 422))
    def list_sources(
        self,
        db: Database,
        keyring: Keyring,
        # ``state`` is a name Litestar reserves for app state: the handler reads it under another.
        source_state: Annotated[
            Literal["active", "paused", "disconnected"] | None,
            QueryParameter(name="state", description="only sources in this state"),
        ] = None,
        connector_type: ConnectorType = None,
        cursor: Cursor = None,
        limit: Limit = DEFAULT_LIMIT,
    ) -> s.SourcePage:
        """Sources by id, a page at a time, each with its state, computed health, entity count, DLQ depth,
        last run and effective schedule; optionally of one ``state`` or ``connector_type``."""
        after_id = decode_cursor("sources", cursor)
        with db.tx() as conn:
            rows = sq.list_sources_page(
                conn, after_id=after_id, state=source_state, connector_type=connector_type, lim=limit + 1
            )
            schedule_of = schedules(conn)
        return s.SourcePage(
            items=[source_out(keyring, r, schedule_of) for r in rows[:limit]],
            next_cursor=next_cursor("sources", [r.id for r in rows], limit),
        )

    @post(
        "/",
        operation_id="createSource",
        sync_to_thread=True,
        status_code=201,
        responses=R(400, 401, 403, 409, 413, 415, 422),
    )
    def create_source(self, data: s.SourceCreate, db: Database, keyring: Keyring) -> Response[s.SourceOut]:
        """Register a source. ``credential`` and ``webhook_secret`` are encrypted and never returned.

        ``Location`` names the new source; a name already taken is a 409 naming ``name``.
        """
        new = NewSource(
            name=data.name,
            connector_type=data.connector_type,
            base_url=data.base_url,
            credential=data.credential,
            webhook_secret=data.webhook_secret,
            scope_mode=data.scope_mode,
            scope_list=data.scope_list,
            content_filters=data.content_filters,
            auth_account=data.auth_account,
            auth_method=data.auth_method,
            state=data.state,
            sync_interval=data.sync_interval,
            reconcile_interval=data.reconcile_interval,
            reconcile_window=window_minutes(data.reconcile_window),
            authority_tier=data.authority_tier,
            webhook_enabled=data.webhook_enabled,
        )
        if data.state == "disconnected" and data.credential:
            raise ProblemError(422, "invalid-field", "a disconnected source holds no credential", field="credential")
        with db.tx() as conn:
            source_id = create_source(conn, keyring, new)
        return created(read_source(db, keyring, source_id), f"/sources/{source_id}")

    @get("/{source_id:int}", operation_id="getSource", sync_to_thread=True, responses=R(400, 401, 404, 422))
    def get_source(self, source_id: SourceId, db: Database, keyring: Keyring) -> s.SourceOut:
        """One source (secrets masked)."""
        return read_source(db, keyring, source_id)

    @patch(
        "/{source_id:int}",
        operation_id="updateSource",
        sync_to_thread=True,
        responses=R(400, 401, 403, 404, 409, 413, 415, 422),
    )
    def update_source(self, source_id: SourceId, data: s.SourcePatch, db: Database, keyring: Keyring) -> s.SourceOut:
        """Change some fields. ``state: disconnected`` clears the credential; ``null`` clears an override.

        A name another source has is a 409 naming ``name``.
        """
        changes: dict[str, Any] = {k: v for k, v in msgspec.structs.asdict(data).items() if v is not msgspec.UNSET}
        if "scope_list" in changes:
            changes["scope_list"] = list(changes["scope_list"])
        if "reconcile_window" in changes:
            changes["reconcile_window"] = window_minutes(changes["reconcile_window"])
        with db.tx() as conn:
            if not update_source(conn, keyring, source_id, changes):
                raise not_found(f"source {source_id}")
        return read_source(db, keyring, source_id)

    @delete(
        "/{source_id:int}", operation_id="deleteSource", sync_to_thread=True, responses=R(400, 401, 403, 404, 409, 422)
    )
    def delete_source(self, source_id: SourceId, db: Database) -> None:
        """Remove a source with its runs, dead letters, notes and entities (foreign keys cascade).

        Refused while a run is queued or running: cancel it first.
        """
        with db.tx() as conn:
            if sq.lock_source(conn, id=source_id) is None:
                raise not_found(f"source {source_id}")
            active = rq.get_active_run(conn, source_id=source_id)
            if active is not None:
                raise ProblemError(
                    409,
                    "run-active",
                    f"the source has an active run (#{active}); cancel it first",
                    active_run_id=active,
                )
            sq.delete_source(conn, id=source_id)

    @post(
        "/{source_id:int}/connect",
        operation_id="connectSource",
        sync_to_thread=True,
        status_code=200,
        responses=R(400, 401, 403, 404, 409, 422),
    )
    def connect(self, source_id: SourceId, db: Database, keyring: Keyring) -> s.ConnectOut:
        """Test the connection (probe); a source that never ran gets its first full run (trigger connect)."""
        from app.api.views import run_out, scrubber

        with db.tx() as conn:
            source = sq.get_source(conn, id=source_id)
            if source is None:
                raise not_found(f"source {source_id}")
            if source.state != "active":
                raise ProblemError(409, "source-not-active", f"the source is {source.state}; set it active first")
            status = probe(conn, source, keyring)
            details = sq.list_source_details(conn, id=source_id)
            never_ran = bool(details) and details[0].last_run_id is None
            run_id: int | None = None
            if status == "ok" and never_ran:
                try:
                    # A savepoint: a conflicting run leaves the probe result in this request's transaction.
                    with conn.transaction():
                        run_id = start_and_defer(conn, source_id, mode="full", trigger="connect")
                except RunConflict:
                    run_id = None
            conn.commit()  # the request owns the transaction: probe result and first run together
            run = rq.get_run(conn, id=run_id) if run_id is not None else None
            return s.ConnectOut(status, run_out(run, scrubber(conn, keyring, source_id)) if run else None)
