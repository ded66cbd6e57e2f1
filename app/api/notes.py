"""Admin notes on entities (seed 003 "Служебные заметки"): the API writes entity_notes, never entities."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, get, put

from app.api import schemas as s
from app.api.auth import principal_of
from app.api.db import Database
from app.api.params import EntityId
from app.api.problems import not_found, problem_responses
from app.queries import notes as nq

R = problem_responses


def _read(db: Database, entity_id: int) -> s.NotesOut:
    with db.tx() as conn:
        r = nq.get_entity_notes(conn, entity_id=entity_id)
    if r is None:
        raise not_found(f"entity {entity_id}")
    return s.NotesOut(
        r.entity_id,
        r.source_id,
        r.source_type,
        r.source_entity_id,
        r.fact_status,
        r.work_kind,
        r.done_text,
        r.rest_text,
        r.owner_note,
        r.updated_by,
        r.updated_at,
    )


class NotesController(Controller):
    path = "/entities/{entity_id:int}/notes"
    tags = ("notes",)

    @get("/", operation_id="getNotes", sync_to_thread=True, responses=R(400, 401, 404, 422))
    def get_notes(self, entity_id: EntityId, db: Database) -> s.NotesOut:
        """The admin notes of an entity (all fields null when none were written)."""
        return _read(db, entity_id)

    @put("/", operation_id="putNotes", sync_to_thread=True, responses=R(400, 401, 403, 404, 413, 415, 422))
    def put_notes(
        self, entity_id: EntityId, data: s.NotesIn, db: Database, request: Request[Any, Any, Any]
    ) -> s.NotesOut:
        """Replace the admin notes of an entity; sync never touches them."""
        author = principal_of(request).name
        with db.tx() as conn:
            stamp = nq.put_entity_notes(
                conn,
                entity_id=entity_id,
                fact_status=data.fact_status,
                work_kind=data.work_kind,
                done_text=data.done_text,
                rest_text=data.rest_text,
                owner_note=data.owner_note,
                updated_by=author,
            )
        if stamp is None:
            raise not_found(f"entity {entity_id}")
        return _read(db, entity_id)
