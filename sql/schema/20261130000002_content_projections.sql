-- migrate:up
-- The three projections of an Entity (seed 000 "Куда ложится Entity"): relational rows with ACL,
-- vector chunks, graph edges; plus cross-source refs, admin notes and webhook dedupe.
set lock_timeout = '5s';
set statement_timeout = '60s';

create extension if not exists vector;

create table entities (
    id                bigint generated always as identity,
    source_id         bigint      not null,
    source_type       text        not null,
    source_entity_id  text        not null,
    natural_key       text,
    container         text,
    status            text        not null,
    deleted_at        timestamptz,
    title             text        not null default '',
    body              text        not null default '',
    url               text,
    author            text,
    source_created_at timestamptz,
    source_updated_at timestamptz,
    metadata          jsonb       not null default '{}'::jsonb,
    acl_principals    text[],
    aliases           text[]      not null default '{}',
    out_of_scope      boolean     not null default false,
    content_hash      text        not null,
    created_at        timestamptz not null default now(),
    updated_at        timestamptz not null default now(),
    constraint entities_pkey primary key (id),
    constraint entities_source_id_fkey foreign key (source_id) references sources (id) on delete cascade,
    constraint entities_status_check check (status in ('draft', 'final', 'archived')),
    constraint entities_metadata_is_object check (jsonb_typeof(metadata) = 'object'),
    -- Seed 000 "идентичность": exactly one row per source record; the loader upserts on this key.
    constraint entities_identity_key unique (source_id, source_type, source_entity_id)
);
create index entities_source_live_idx on entities (source_id, source_type) where deleted_at is null;
create index entities_natural_key_idx on entities (source_id, natural_key);
create index entities_acl_principals_idx on entities using gin (acl_principals);
create index entities_aliases_idx on entities using gin (aliases) where aliases <> '{}';
create index entities_metadata_idx on entities using gin (metadata jsonb_path_ops);

comment on table entities is 'Relational projection: one row per source record (seed 000). Written only by the sync pipeline (role harvester_worker).';
comment on column entities.status is 'Content lifecycle set by classify: draft | final | archived. Deletion is the separate deleted_at axis.';
comment on column entities.deleted_at is 'Soft-delete marker set by reconciliation when the record vanished; clearing it restores the old status (seed 000 "Удаления").';
comment on column entities.acl_principals is 'Rights captured with the record: principals like user:<email>, group:<connector>:<id>. NULL = unknown: visible to nobody.';
comment on column entities.aliases is 'Other source ids of the same record (e.g. moved Jira issue); reconciliation collapses duplicates found through them.';
comment on column entities.out_of_scope is 'Neighbour fetched one hop outside the scope by a link (seed 003 "Соседняя задача").';
comment on column entities.content_hash is 'SHA-256 of the normalised entity; an equal hash means the upsert writes nothing.';
comment on column entities.body is 'Clean text for display and embedding.';

create table entity_chunks (
    id              bigint generated always as identity,
    entity_id       bigint      not null,
    ordinal         integer     not null,
    body            text        not null,
    content_hash    text        not null,
    embedding       vector(384),
    embedding_model text,
    -- Copied from the entity by trigger so the permission filter runs in the same index scan.
    source_id       bigint      not null,
    acl_principals  text[],
    entity_status   text        not null,
    entity_deleted  boolean     not null default false,
    created_at      timestamptz not null default now(),
    updated_at      timestamptz not null default now(),
    constraint entity_chunks_pkey primary key (id),
    constraint entity_chunks_entity_id_fkey foreign key (entity_id) references entities (id) on delete cascade,
    constraint entity_chunks_ordinal_not_negative check (ordinal >= 0),
    constraint entity_chunks_entity_ordinal_key unique (entity_id, ordinal)
);
create index entity_chunks_embedding_hnsw_idx on entity_chunks using hnsw (embedding vector_cosine_ops)
    with (m = 16, ef_construction = 64);
create index entity_chunks_model_idx on entity_chunks (embedding_model);

comment on table entity_chunks is 'Vector projection (seed 000): per-chunk embeddings, child rows of the entity, with a content hash.';
comment on column entity_chunks.content_hash is 'SHA-256 of the embedded text; unchanged hash = no re-embedding, no write.';
comment on column entity_chunks.acl_principals is 'Inherited from the entity (trigger); the chunk is never visible to more than its entity.';
comment on column entity_chunks.embedding_model is 'Model that produced the vector; a different configured model triggers a background re-embed.';

create table entity_edges (
    from_entity_id          bigint not null,
    source_id               bigint not null,
    relation                text   not null,
    direction               text   not null default 'outward',
    target_type             text   not null,
    target_source_entity_id text   not null,
    target_key              text,
    constraint entity_edges_pkey primary key (from_entity_id, relation, target_type, target_source_entity_id),
    constraint entity_edges_from_entity_id_fkey foreign key (from_entity_id) references entities (id) on delete cascade,
    constraint entity_edges_direction_check check (direction in ('outward', 'inward'))
);
create index entity_edges_target_idx on entity_edges (source_id, target_type, target_source_entity_id);
comment on table entity_edges is
    'Graph projection: links inside one source, owned by the declaring entity; loading X replaces only X''s edges (seed 003).';
comment on column entity_edges.target_source_entity_id is 'Natural key of the target inside the same source; the target may not be loaded yet.';
comment on column entity_edges.direction is 'outward: from_entity is the source side as the source defines it (Jira outwardIssue).';

create table entity_refs (
    entity_id   bigint not null,
    relation    text   not null,
    target_kind text   not null,
    target_ref  text   not null,
    source_hint text,
    constraint entity_refs_pkey primary key (entity_id, relation, target_kind, target_ref),
    constraint entity_refs_entity_id_fkey foreign key (entity_id) references entities (id) on delete cascade
);
create index entity_refs_target_idx on entity_refs (target_kind, target_ref);
comment on table entity_refs is
    'Mentions of other sources kept as claims, not edges (seed 000 "Формат refs"): Knowledge Store resolves them later.';

create table entity_notes (
    source_id        bigint      not null,
    source_type      text        not null,
    source_entity_id text        not null,
    fact_status      text,
    work_kind        text,
    done_text        text,
    rest_text        text,
    owner_note       text,
    updated_by       text,
    created_at       timestamptz not null default now(),
    updated_at       timestamptz not null default now(),
    constraint entity_notes_pkey primary key (source_id, source_type, source_entity_id),
    constraint entity_notes_source_id_fkey foreign key (source_id) references sources (id) on delete cascade
);
comment on table entity_notes is
    'Admin notes keyed by entity identity (seed 003 "Служебные заметки"); sync never writes them, except the field-by-field merge when reconciliation collapses a duplicate.';

create table run_seen_items (
    run_id           bigint not null,
    source_type      text   not null,
    source_entity_id text   not null,
    constraint run_seen_items_pkey primary key (run_id, source_type, source_entity_id),
    constraint run_seen_items_run_id_fkey foreign key (run_id) references sync_runs (id) on delete cascade
);
comment on table run_seen_items is
    'Identities enumerated by a full or reconciliation run, so that "not seen" can be computed without touching unchanged entities. Emptied when the run ends.';

create unlogged table webhook_deliveries (
    source_id   bigint      not null,
    delivery_id text        not null,
    received_at timestamptz not null default now(),
    expires_at  timestamptz not null,
    constraint webhook_deliveries_pkey primary key (source_id, delivery_id)
);
create index webhook_deliveries_expires_at_idx on webhook_deliveries (expires_at);
comment on table webhook_deliveries is
    'Seen webhook delivery ids (one webhook processed once). Unlogged on purpose: the dedupe window is ephemeral (seed 000 "Реал-тайм").';

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
