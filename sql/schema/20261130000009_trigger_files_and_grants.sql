-- migrate:up
-- Least-privilege start-up (issue 9 §5): `harvester db migrate` is the only thing that runs DDL.
-- 1. schema_trigger_files records the checksum of each re-appliable file in sql/triggers, so migrate
--    re-applies a file only when its text changed, and `serve`/`worker` can tell a stale one at start.
-- 2. Grants the login roles of docs/operations.md need (members of harvester_api / harvester_worker
--    only): sequences and functions created after migration 4, and the defaults for later ones.
set lock_timeout = '5s';
set statement_timeout = '60s';

create table schema_trigger_files (
    name       text        not null,
    checksum   text        not null,
    applied_at timestamptz not null default now(),
    constraint schema_trigger_files_pkey primary key (name),
    constraint schema_trigger_files_checksum_check check (checksum ~ '^[0-9a-f]{64}$')
);
comment on table schema_trigger_files is
    'Re-appliable files of sql/triggers as last applied by harvester db migrate (one row per file name).';
comment on column schema_trigger_files.name is 'File name inside sql/triggers, e.g. 100_timestamps.sql.';
comment on column schema_trigger_files.checksum is 'sha256 (hex) of the file text that was applied.';
comment on column schema_trigger_files.applied_at is 'When migrate last applied this text.';

-- Both roles check at start that the schema is current; only the migrating owner writes these rows.
grant select on schema_migrations, schema_trigger_files to harvester_api, harvester_worker;

grant usage on schema public to harvester_api, harvester_worker;
grant usage, select on all sequences in schema public to harvester_api, harvester_worker;
alter default privileges in schema public grant usage, select on sequences to harvester_api, harvester_worker;
alter default privileges in schema public grant execute on functions to harvester_api, harvester_worker;

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
