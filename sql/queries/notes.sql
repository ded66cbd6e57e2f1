-- Admin notes on entities (seed 003 "Служебные заметки"): written by the API, never by sync.

-- name: GetEntityNotes :one
-- The notes of an entity, addressed by the entity's id (the notes are keyed by its identity).
select e.id as entity_id, e.source_id, e.source_type, e.source_entity_id,
       n.fact_status, n.work_kind, n.done_text, n.rest_text, n.owner_note, n.updated_by, n.updated_at
from entities e
left join entity_notes n
  on n.source_id = e.source_id and n.source_type = e.source_type and n.source_entity_id = e.source_entity_id
where e.id = sqlc.arg(entity_id)::bigint;

-- name: PutEntityNotes :one
-- Replaces the notes of an entity's identity; the entity row itself is only read.
insert into entity_notes as n (source_id, source_type, source_entity_id, fact_status, work_kind, done_text,
                               rest_text, owner_note, updated_by)
select e.source_id, e.source_type, e.source_entity_id, sqlc.narg(fact_status)::text, sqlc.narg(work_kind)::text,
       sqlc.narg(done_text)::text, sqlc.narg(rest_text)::text, sqlc.narg(owner_note)::text,
       sqlc.arg(updated_by)::text
from entities e where e.id = sqlc.arg(entity_id)::bigint
on conflict on constraint entity_notes_pkey do update
set fact_status = excluded.fact_status,
    work_kind = excluded.work_kind,
    done_text = excluded.done_text,
    rest_text = excluded.rest_text,
    owner_note = excluded.owner_note,
    updated_by = excluded.updated_by
returning n.updated_at;
