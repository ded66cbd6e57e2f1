-- migrate:up
-- GET /principals (the Admin Panel's "search as" picker) unnested the ACL of every live entity and
-- grouped them on every call: 0.4 s at 100,000 entities, 5.8 s at 1,000,000, so about a minute at
-- 10,000,000, past any HTTP timeout. GET /sources counted each listed source's live entities per call
-- (73 ms for a page at 1,000,000). Both grew with the content, not with the page (decision 84).
-- Two tables hold the same figures, kept exact by the statement triggers of
-- sql/triggers/700_entity_totals.sql, which also rebuild them from `entities` when applied:
-- - source_entity_totals: live (not soft-deleted) entities per source;
-- - acl_principal_totals: per principal and source, the live entities whose ACL names the principal.
-- Both are keyed by source: only one run of a source is active at a time (sync_runs_one_active_per_source),
-- so two workers never wait on each other's counter rows, even for a group every source shares.
set lock_timeout = '5s';
set statement_timeout = '60s';

create table source_entity_totals (
    source_id bigint not null,
    live      bigint not null,
    constraint source_entity_totals_pkey primary key (source_id),
    constraint source_entity_totals_source_id_fkey foreign key (source_id) references sources (id) on delete cascade,
    constraint source_entity_totals_live_not_negative check (live >= 0)
);
comment on table source_entity_totals is
    'Live (not soft-deleted) entities per source (GET /sources), kept exact by statement triggers on entities (sql/triggers/700_entity_totals.sql).';

-- Byte order ("C"): the listing's keyset and its prefix filters compare bytes, and the primary key
-- then serves them in order.
create table acl_principal_totals (
    principal text collate "C" not null,
    source_id bigint not null,
    entities  bigint not null,
    constraint acl_principal_totals_pkey primary key (principal, source_id),
    constraint acl_principal_totals_source_id_fkey foreign key (source_id) references sources (id) on delete cascade,
    constraint acl_principal_totals_entities_positive check (entities > 0)
);
comment on table acl_principal_totals is
    'Per ACL principal and source, the live entities whose acl_principals name it (GET /principals), kept exact by statement triggers on entities (sql/triggers/700_entity_totals.sql); a principal no live entity names has no row.';
-- The foreign key's cascade (a source's deletion) finds the source's rows through this index.
create index acl_principal_totals_source_id_idx on acl_principal_totals (source_id);

-- One entity's share, signed, as the triggers pass it from the statement's branch to the summing query:
-- +1 for a new live row, -1 for an old one.
create type entity_totals_share as (id bigint, source_id bigint, acl text[], sign integer);
comment on type entity_totals_share is
    'An entity row''s share in source_entity_totals and acl_principal_totals: its id, source, ACL, +1 counted in or -1 counted out (sql/triggers/700_entity_totals.sql).';

-- The triggers write as the role that changed the entities: the worker loads them, and a source's
-- deletion (the API) cascades to them.
grant insert, update, delete on source_entity_totals, acl_principal_totals to harvester_api, harvester_worker;

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
