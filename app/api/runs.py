"""Runs (seed 000 §2, seed 001): start, history, live progress, cancel, and "sync all"."""

from __future__ import annotations

import re
from typing import Annotated, Any, cast

import msgspec
import psycopg
from litestar import Controller, get, post
from litestar.params import Parameter

from app.api import schemas as s
from app.api.db import Database
from app.api.params import Cursor, Limit, RunId, SourceId
from app.api.problems import ProblemError, not_found, problem_responses
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
_IDS = re.compile(r"^\d{1,19}(,\d{1,19}){0,999}$")


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
    def start_run(
        self, source_id: SourceId, data: s.RunCreate, db: Database, keyring: Keyring
    ) -> s.RunOut:
        """Queue a run (full, incremental or reconciliation; optional scope). 409 names the active run."""
        with db.tx() as conn:
            source = active_source(conn, source_id)
            scope = _scope(data, source.connector_type)
            options = {"confirm_mass_delete": True} if data.confirm_mass_delete else None
            run_id = start_and_defer(
                conn, source_id, mode=data.mode, trigger="manual", scope=scope, options=options
            )
            conn.commit()
            return _one_run(conn, keyring, run_id)

    @get("/sources/{source_id:int}/runs", operation_id="listRuns", sync_to_thread=True, responses=R(400, 401, 404, 422))
    def list_runs(
        self, source_id: SourceId, db: Database, keyring: Keyring, before_id: Cursor = None, limit: Limit = 50
    ) -> s.RunPage:
        """Run history, newest first, with the derived type, duration, N of M, errors, API calls and 429s."""
        with db.tx() as conn:
            if sq.get_source(conn, id=source_id) is None:
                raise not_found(f"source {source_id}")
            rows = rq.list_runs(conn, source_id=source_id, before_id=before_id, lim=limit + 1)
            scrub = scrubber(conn, keyring, source_id)
        page = rows[:limit]
        return s.RunPage(
            items=[run_out(r, scrub) for r in page], next_before_id=page[-1].id if len(rows) > limit else None
        )

    @get("/runs", operation_id="getRunGroup", sync_to_thread=True, responses=R(400, 401, 404, 422))
    def run_group(
        self,
        db: Database,
        keyring: Keyring,
        ids: Annotated[str, Parameter(description="comma-separated run ids, e.g. 1,2,3", max_length=20_000)],
    ) -> s.RunGroupOut:
        """Status of a group of runs (e.g. one "sync all"), computed from the runs now, never stored.

        ``status`` is ``queued`` (none started), ``running`` (some still live), ``succeeded`` (all),
        ``partially_failed`` (some succeeded, others failed or were cancelled), ``failed`` (none succeeded,
        some failed) or ``cancelled`` (all cancelled); ``counts`` has every run state,
        ``succeeded_with_errors`` the succeeded runs that left dead letters, ``missing`` the ids that are
        not runs. 404 when none of the ids is a run.
        """
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

    @get("/runs/{run_id:int}", operation_id="getRun", sync_to_thread=True, responses=R(400, 401, 404, 422))
    def get_run(self, run_id: RunId, db: Database, keyring: Keyring) -> s.RunOut:
        """One run with live progress: N of M, rate (items/s since it started) and ETA."""
        with db.tx() as conn:
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
    def sync_all(
        self, db: Database, keyring: Keyring, data: s.SyncAllCreate | None = None
    ) -> s.SyncAllOut:
        """One run per active source (no global run). Sources with an active run are skipped and listed.

        The group's status is ``GET /api/v1/runs?ids=...`` with the returned ids (``status_url``).
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
        status_url = f"/api/v1/runs?ids={','.join(map(str, run_ids))}" if run_ids else None
        return s.SyncAllOut(run_ids=run_ids, status_url=status_url, runs=runs, skipped=skipped)
