-- migrate:up
-- The load path stages each page with binary COPY into a session-private temporary table, then writes it
-- with one INSERT ... SELECT ... ON CONFLICT (issue 15 §2, docs/decisions.md). This table is the stage's
-- declared shape: sqlc types the queries against it, and CreateEntityLoadStage builds the temporary
-- table `like` it. pg_temp is searched first, so within a session the queries' unqualified
-- `entity_load_stage` is the temporary copy; the CHECK (false) (not copied by LIKE) makes any write that
-- reached this shared table fail loudly instead of mixing two workers' pages.
set lock_timeout = '5s';
set statement_timeout = '60s';

create unlogged table entity_load_stage (
    source_type text not null,
    source_entity_id text not null,
    natural_key text,
    container text,
    status text not null,
    title text not null,
    body text not null,
    url text,
    author text,
    source_created_at timestamptz,
    source_updated_at timestamptz,
    metadata jsonb not null,
    acl_principals text[],
    aliases text[] not null,
    out_of_scope boolean not null,
    content_hash text not null,
    constraint entity_load_stage_template_only check (false) no inherit
);

comment on table entity_load_stage is
    'Shape of the per-session temporary stage of the entity load path (never holds a row: the temporary '
    'copy made by CreateEntityLoadStage shadows it through pg_temp).';
comment on constraint entity_load_stage_template_only on entity_load_stage is
    'The shared table is a template only: a page copied here instead of into the session''s temporary '
    'stage is refused.';
comment on column entity_load_stage.content_hash is
    'SHA-256 of the normalised entity (app/pipeline/transform.py); equal hash -> the upsert writes nothing.';

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
