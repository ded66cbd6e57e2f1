-- Queries of the migration runner (app/db/migrate.py).

-- name: CreateSchemaMigrations :exec
-- Creates the bookkeeping table before the first migration exists (same shape as in migration 1).
create table if not exists schema_migrations (
    version    text        not null,
    checksum   text,
    applied_at timestamptz not null default now(),
    constraint schema_migrations_pkey primary key (version)
);

-- name: ListAppliedMigrations :many
-- Every applied migration with the checksum recorded when it was applied.
select version, checksum from schema_migrations order by version;

-- name: RecordMigration :exec
-- Marks one migration applied, inside the transaction that applied it.
insert into schema_migrations (version, checksum) values (sqlc.arg(version), sqlc.arg(checksum));

-- name: TryMigrateLock :one
-- Session advisory lock serialising every migrating process on this database (polled, never waited on).
select pg_try_advisory_lock(sqlc.arg(key)::bigint)::boolean as acquired;

-- name: ReleaseMigrateLock :exec
-- Releases the session advisory lock taken by TakeMigrateLock.
select pg_advisory_unlock(sqlc.arg(key)::bigint);

-- name: ServerRequirements :one
-- What the server offers of what Harvester needs: its version number, the vector extension's version in this
-- database ('': not created yet) and the one CREATE EXTENSION would install ('': pgvector is not installed on
-- the server). Checked before any migration (decision 156).
select current_setting('server_version_num')::integer as server_version_num,
       current_setting('server_version')::text as server_version,
       coalesce((select e.extversion::text from pg_catalog.pg_extension as e where e.extname = 'vector'), '')::text
           as pgvector_installed,
       coalesce((select x.default_version::text from pg_catalog.pg_available_extensions() as x
                 where x.name = 'vector'), '')::text as pgvector_available;

-- name: JobQueueInstalled :one
-- Whether Procrastinate's schema is present.
select (to_regclass('public.procrastinate_jobs') is not null)::boolean as installed;

-- name: ListAppliedTriggerFiles :many
-- Each re-appliable trigger file with the checksum of the text migrate last applied.
select name, checksum from schema_trigger_files order by name;

-- name: RecordTriggerFile :exec
-- Records (or updates) the checksum of a trigger file, inside the transaction that applied it.
insert into schema_trigger_files (name, checksum) values (sqlc.arg(name), sqlc.arg(checksum))
on conflict on constraint schema_trigger_files_pkey
do update set checksum = excluded.checksum, applied_at = now();

-- name: SchemaInstalled :one
-- Whether this database was ever migrated (schema_trigger_files comes later, with migration 9).
select (to_regclass('public.schema_migrations') is not null)::boolean as installed;
