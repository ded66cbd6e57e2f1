-- migrate:up transaction:false
-- The page statements that look up a page's identities in entities (TouchFetched, SoftDeleteItems,
-- ListStoredHashesByIdentity) probe the identity key once per identity (decision 82). A source that is
-- new or grew since the last ANALYZE looks like one row to the planner; with an index that starts with
-- source_id and nothing else to match, the planner took entities_natural_key_idx with source_id alone
-- for the probe, as cheap as the identity key by its estimate, and read the whole source for each
-- identity (117 ms a page at 20,000 entities). That index serves one look-up: a natural key inside a
-- source (the collapse step's alias probes, migration 26), always by equality, so never for a null key.
-- The same index restricted to present keys still answers those look-ups (an equality implies the key
-- is not null), while a condition on source_id alone can no longer use it.
-- transaction:false: the runner sends each statement on its own (CONCURRENTLY refuses a transaction);
-- CONCURRENTLY takes only a SHARE UPDATE EXCLUSIVE lock, so the pipeline keeps writing entities. The new
-- index is built before the old one goes, so the collapse step never runs without one. If the file is
-- interrupted, docs/operations.md (Migrations) says how to go on.
set lock_timeout = '5s';
set statement_timeout = '30min';
-- squawk assumes a transaction (.squawk.toml); a transaction:false file runs outside one.
-- squawk-ignore ban-concurrent-index-creation-in-transaction
create index concurrently entities_natural_key_present_idx on entities (source_id, natural_key)
    where natural_key is not null;
-- squawk-ignore ban-concurrent-index-creation-in-transaction
drop index concurrently entities_natural_key_idx;

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
