-- migrate:up transaction:false
-- Reconciliation's collapse step (harvester_collapse_duplicates, rewritten in migration 26) starts from
-- the live entities of a source that list aliases: a few in a thousand (Jira lists an issue's previous
-- keys after a move). This partial index holds exactly those rows, so the step reads them and not the
-- whole source. It stays small, and rows without aliases (nearly all writes) never enter it. Its
-- predicate names aliases and deleted_at: changes to either could already not be HOT updates (both are
-- covered by other indexes), and the provenance touch of unchanged rows still can be (decision 79).
-- transaction:false: the runner sends each statement on its own (CONCURRENTLY refuses a transaction);
-- CONCURRENTLY takes only a SHARE UPDATE EXCLUSIVE lock, so the pipeline keeps writing entities meanwhile.
set lock_timeout = '5s';
set statement_timeout = '30min';
-- squawk assumes a transaction (.squawk.toml); a transaction:false file runs outside one.
-- squawk-ignore ban-concurrent-index-creation-in-transaction
create index concurrently entities_alias_holders_idx on entities (source_id) where aliases <> '{}' and deleted_at is null;

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
