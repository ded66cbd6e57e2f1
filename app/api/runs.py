"""Runs (seed 000 §2, seed 001): start, history, live progress, cancel, and "sync all"."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal, cast

import msgspec
import psycopg
from litestar import Controller, Response, get, post
from litestar.params import Parameter, QueryParameter

from app.api import schemas as s
from app.api.db import Database
from app.api.pagination import DEFAULT_LIMIT, Cursor, Limit, decode_cursor, next_cursor
from app.api.params import MAX_ID, RunId, SourceId
from app.api.problems import API_PREFIX, ProblemError, accepted, not_found, problem_responses
from app.api.runs_cache import runs_cache_middleware
from app.api.views import Scrub, run_out, scrubber
from app.queries import completeness as cq
from app.queries import runs as rq
from app.queries import sources as sq
from app.registry import get_spec
from app.secrets import Keyring
from app.services.jobs import start_and_defer
from app.services.run_status import group_status
from app.services.sources import InvalidField, RunConflict

R = problem_responses
# The run lists and a run, answered from encoded bytes until runs change (app/api/runs_cache.py).
CACHED = [runs_cache_middleware]
_IDS = re.compile(r"^\d{1,19}(,\d{1,19}){0,999}$")

# Filters shared by GET /runs and GET /sources/{id}/runs (documented in docs/api.md "Lists").
RunState = Annotated[
    Literal["queued", "running", "succeeded", "failed", "cancelled"] | None,
    # ``state`` is a name Litestar reserves for app state: handlers read it as ``run_state``.
    QueryParameter(name="state", description="only runs in this state"),
]
RunMode = Annotated[Literal["full", "incremental", "reconciliation"] | None, Parameter(description="only this mode")]
RunType = Annotated[
    Literal["full", "incremental", "partial_resync", "dlq_retry", "reconciliation"] | None,
    Parameter(description="only this derived history type"),
]
RunTrigger = Annotated[
    Literal["connect", "schedule", "webhook", "watchdog", "manual"] | None,
    Parameter(description="only runs started by this trigger"),
]
StartedFrom = Annotated[
    datetime | None,
    Parameter(description="RFC 3339 with an offset: runs created (queued) at or after this instant"),
]
StartedTo = Annotated[
    datetime | None, Parameter(description="RFC 3339 with an offset: runs created (queued) before this instant")
]


class RunFilters(msgspec.Struct, frozen=True):
    state: str | None = None
    mode: str | None = None
    run_type: str | None = None
    trigger: str | None = None
    started_from: datetime | None = None
    started_to: datetime | None = None

    def given(self) -> list[str]:
        return [f for f in self.__struct_fields__ if getattr(self, f) is not None]

    def check(self) -> None:
        for name in ("started_from", "started_to"):
            value = getattr(self, name)
            if value is not None and value.utcoffset() is None:
                raise InvalidField(name, "must be an RFC 3339 time with an offset, e.g. 2026-11-30T12:00:00Z")
        if self.started_from and self.started_to and self.started_from >= self.started_to:
            raise InvalidField("started_to", "must be after started_from")


def runs_page(
    conn: psycopg.Connection[Any],
    keyring: Keyring,
    source_id: int | None,
    filters: RunFilters,
    cursor: str | None,
    limit: int,
) -> s.RunPage:
    """One page of run history, newest first (ListRunsPage: keyset on id, never OFFSET)."""
    filters.check()
    before_id = decode_cursor("runs", cursor)
    rows = rq.list_runs_page(
        conn,
        source_id=source_id,
        state=filters.state,
        mode=filters.mode,
        run_type=filters.run_type,
        trigger=filters.trigger,
        started_from=filters.started_from,
        started_to=filters.started_to,
        before_id=before_id,
        lim=limit + 1,
    )
    scrubs: dict[int, Scrub] = {}
    items = []
    for r in rows[:limit]:
        if r.source_id not in scrubs:
            scrubs[r.source_id] = scrubber(conn, keyring, r.source_id)
        items.append(run_out(r, scrubs[r.source_id]))
    return s.RunPage(items=items, next_cursor=next_cursor("runs", [r.id for r in rows], limit))


def active_source(conn: psycopg.Connection[Any], source_id: int) -> sq.GetSourceRow:
    source = sq.get_source(conn, id=source_id)
    if source is None:
        raise not_found(f"source {source_id}")
    if source.state != "active":
        raise ProblemError(409, "source-not-active", f"the source is {source.state}; runs start on active sources only")
    return source


def _scope(data: s.RunCreate, connector_type: str) -> dict[str, Any] | None:
    scope = data.scope
    if scope is None:
        return None
    if isinstance(scope, s.WindowScope):
        return {"kind": "window", "since": scope.since.isoformat()}
    if isinstance(scope, s.ContainersScope):
        return {"kind": "containers", "containers": list(scope.containers)}
    allowed = get_spec(connector_type).manifest.source_types
    for i, item in enumerate(scope.items):
        if item.source_type not in allowed:
            raise InvalidField(f"scope.items[{i}].source_type", f"must be one of {', '.join(allowed)}")
    return {
        "kind": "items",
        "items": [{"source_type": i.source_type, "source_entity_id": i.source_entity_id} for i in scope.items],
    }


def _one_run(conn: psycopg.Connection[Any], keyring: Keyring, run_id: int) -> s.RunOut:
    run = rq.get_run(conn, id=run_id)
    if run is None:
        raise not_found(f"run {run_id}")
    out = run_out(run, scrubber(conn, keyring, run.source_id))
    if run.mode != "reconciliation":
        return out
    audit = [
        s.CompletenessOut(
            c.container,
            c.source_count,
            c.live_count,
            c.live_count - c.source_count if c.source_count is not None else None,
        )
        for c in cq.list_run_completeness(conn, run_id=run_id)
    ]
    return msgspec.structs.replace(out, completeness=audit)


def _group(db: Database, keyring: Keyring, ids: str) -> s.RunGroupOut:
    if not _IDS.match(ids):
        raise InvalidField("ids", "must be 1 to 1000 comma-separated run ids")
    wanted = sorted({int(i) for i in ids.split(",")})
    if any(i < 1 or i > 2**63 - 1 for i in wanted):
        raise InvalidField("ids", "run ids are positive 64-bit integers")
    with db.tx() as conn:
        rows = rq.list_runs_by_ids(conn, ids=wanted)
        scrubs: dict[int, Scrub] = {}
        runs = []
        for r in rows:
            if r.source_id not in scrubs:
                scrubs[r.source_id] = scrubber(conn, keyring, r.source_id)
            runs.append(run_out(r, scrubs[r.source_id]))
    if not rows:
        raise not_found(f"runs {ids}" if len(wanted) > 1 else f"run {wanted[0]}")
    status, counts = group_status(r.state for r in rows)
    found = {r.id for r in rows}
    return s.RunGroupOut(
        status=cast(s.GroupStatus, status),
        counts=counts,
        succeeded_with_errors=sum(1 for r in rows if r.state == "succeeded" and (r.error_count or 0) > 0),
        missing=[i for i in wanted if i not in found],
        runs=runs,
    )


class RunsController(Controller):
    path = "/"
    tags = ("runs",)

    @post(
        "/sources/{source_id:int}/runs",
        operation_id="startRun",
        sync_to_thread=True,
        status_code=202,
        responses=R(400, 401, 403, 404, 409, 413, 415, 422),
    )
    def start_run(self, source_id: SourceId, data: s.RunCreate, db: Database, keyring: Keyring) -> Response[s.RunOut]:
        """Queue a run (full, incremental or reconciliation; optional scope). 409 names the active run.

        ``Location`` names the new run (``GET /api/v1/runs/{id}`` follows its progress).
        """
        with db.tx() as conn:
            source = active_source(conn, source_id)
            scope = _scope(data, source.connector_type)
            options = {"confirm_mass_delete": True} if data.confirm_mass_delete else None
            run_id = start_and_defer(conn, source_id, mode=data.mode, trigger="manual", scope=scope, options=options)
            conn.commit()
            return accepted(_one_run(conn, keyring, run_id), f"/runs/{run_id}")

    @get(
        "/sources/{source_id:int}/runs",
        operation_id="listRuns",
        sync_to_thread=True,
        responses=R(400, 401, 404, 422),
        middleware=CACHED,
    )
    def list_runs(
        self,
        source_id: SourceId,
        db: Database,
        keyring: Keyring,
        run_state: RunState = None,
        mode: RunMode = None,
        run_type: RunType = None,
        trigger: RunTrigger = None,
        started_from: StartedFrom = None,
        started_to: StartedTo = None,
        cursor: Cursor = None,
        limit: Limit = DEFAULT_LIMIT,
    ) -> s.RunPage:
        """A source's run history, newest first, with the derived type, duration, N of M, errors, API calls
        and 429s; the same filters as ``GET /runs``."""
        filters = RunFilters(run_state, mode, run_type, trigger, started_from, started_to)
        with db.read() as conn:
            # A run names an existing source (foreign key): only an empty page, or bad input (a 404 comes
            # before a 422, as it did), needs to ask whether the source exists, so the usual request is one
            # query (issue 15 §2).
            try:
                page = runs_page(conn, keyring, source_id, filters, cursor, limit)
            except (InvalidField, ProblemError):
                if sq.get_source(conn, id=source_id) is None:
                    raise not_found(f"source {source_id}") from None
                raise
            if not page.items and sq.get_source(conn, id=source_id) is None:
                raise not_found(f"source {source_id}")
            return page

    @get("/runs", operation_id="listAllRuns", sync_to_thread=True, responses=R(400, 401, 404, 422), middleware=CACHED)
    def all_runs(
        self,
        db: Database,
        keyring: Keyring,
        ids: Annotated[
            str | None,
            Parameter(
                description="comma-separated run ids, e.g. 1,2,3: answers the group's status instead of a page",
                max_length=20_000,
            ),
        ] = None,
        source_id: Annotated[int | None, Parameter(ge=1, le=MAX_ID, description="only this source's runs")] = None,
        run_state: RunState = None,
        mode: RunMode = None,
        run_type: RunType = None,
        trigger: RunTrigger = None,
        started_from: StartedFrom = None,
        started_to: StartedTo = None,
        cursor: Cursor = None,
        limit: Limit = DEFAULT_LIMIT,
    ) -> s.RunPage | s.RunGroupOut:
        """Runs across sources, newest first, filtered by source, state, mode, derived type, trigger and
        creation time; or, with ``ids``, the status of that group of runs (e.g. one "sync all").

        Without ``ids``: a page ``{items, next_cursor}``. With ``ids`` (no other parameter): the group's
        status, computed from the runs now, never stored: ``status`` is ``queued`` (none started),
        ``running`` (some still live), ``succeeded`` (all), ``partially_failed`` (some succeeded, others
        failed or were cancelled), ``failed`` (none succeeded, some failed) or ``cancelled`` (all
        cancelled); ``counts`` has every run state, ``succeeded_with_errors`` the succeeded runs that left
        dead letters, ``missing`` the ids that are not runs. 404 when none of the ids is a run.
        """
        filters = RunFilters(run_state, mode, run_type, trigger, started_from, started_to)
        if ids is None:
            with db.read() as conn:  # one query, as GET /sources/{id}/runs (decision 51)
                return runs_page(conn, keyring, source_id, filters, cursor, limit)
        extra = filters.given() + [n for n, v in (("source_id", source_id), ("cursor", cursor)) if v is not None]
        if extra:
            raise InvalidField(extra[0], "cannot be combined with ids (a group's status is not a page)")
        return _group(db, keyring, ids)

    @get(
        "/runs/{run_id:int}",
        operation_id="getRun",
        sync_to_thread=True,
        responses=R(400, 401, 404, 422),
        middleware=CACHED,
    )
    def get_run(self, run_id: RunId, db: Database, keyring: Keyring) -> s.RunOut:
        """One run with live progress: N of M, rate (items/s since it started) and ETA."""
        # Autocommit (decision 51): the Admin Panel polls this. A reconciliation's completeness rows are read
        # after the run, so they are never older than it; no BEGIN/COMMIT round trips (issue 15 §2).
        with db.read() as conn:
            return _one_run(conn, keyring, run_id)

    @post(
        "/runs/{run_id:int}/cancel",
        operation_id="cancelRun",
        sync_to_thread=True,
        status_code=200,
        responses=R(400, 401, 403, 404, 409, 422),
    )
    def cancel_run(self, run_id: RunId, db: Database, keyring: Keyring) -> s.RunOut:
        """Cancel a queued or running run; the worker stops at its next page; the next run starts fresh."""
        with db.tx() as conn:
            if rq.cancel_run(conn, id=run_id) is None:
                run = rq.get_run(conn, id=run_id)
                if run is None:
                    raise not_found(f"run {run_id}")
                raise ProblemError(409, "run-finished", f"run {run_id} is already {run.state}")
            conn.commit()
            return _one_run(conn, keyring, run_id)

    @post(
        "/sync-all",
        operation_id="syncAll",
        sync_to_thread=True,
        status_code=202,
        responses=R(400, 401, 403, 413, 415, 422),
    )
    def sync_all(self, db: Database, keyring: Keyring, data: s.SyncAllCreate | None = None) -> Response[s.SyncAllOut]:
        """One run per active source (no global run). Sources with an active run are skipped and listed.

        The body is optional (default mode ``incremental``). The group's status is
        ``GET /api/v1/runs?ids=...`` with the returned ids: ``status_url``, also the ``Location`` header
        when at least one run started.
        """
        mode = data.mode if data is not None else "incremental"
        run_ids: list[int] = []
        skipped: list[s.SkippedSource] = []
        with db.tx() as conn:
            for source_id in sq.list_active_source_ids(conn):
                try:
                    with conn.transaction():  # a savepoint: one source's conflict keeps the others
                        run_ids.append(start_and_defer(conn, source_id, mode=mode, trigger="manual"))
                except RunConflict as exc:
                    skipped.append(s.SkippedSource(source_id, exc.active_run_id))
            conn.commit()
            runs = [_one_run(conn, keyring, run_id) for run_id in run_ids]
        group = f"/runs?ids={','.join(map(str, run_ids))}" if run_ids else None
        status_url = f"{API_PREFIX}{group}" if group else None
        out = s.SyncAllOut(run_ids=run_ids, status_url=status_url, runs=runs, skipped=skipped)
        return accepted(out, group) if group else Response(out, status_code=202)
