-- migrate:up transaction:false
-- Full-text search's visibility join, read from an index (decision 117). SearchEntitiesText matches chunks
-- through their stored lexemes (entity_chunk_lexemes, decision 113) and then reads, for every match, the
-- chunk's entity, source, ACL, status and deletion from entity_chunks. That heap holds the text and the
-- vector too (1.6 KB a chunk of 150 words), so for three common words at a million chunks (87 k matches)
-- the planner hashed the whole table after a sequential scan of 1.5 GB: 1.3 of the statement's 3.3 s.
-- This index carries those six columns, keyed by id, 90 MB at a million chunks: each match is one
-- index-only probe (3 us, no heap page read while the visibility map is set, which autovacuum keeps),
-- and the first step of the same query took 1.3 s instead of 2.4.
-- - INCLUDE, not key columns: the look-up is by id only; the others ride along to be read, not searched.
-- - Its price: one more B-tree entry per chunk written, and an update of a chunk's ACL, status or deletion
--   is never HOT (the ACL's GIN index already made most of them not HOT; a page of 1.6 KB rows rarely
--   has room for one anyway). Measured by bench/search_text.py's write line.
-- transaction:false: CONCURRENTLY refuses a transaction; it takes only a SHARE UPDATE EXCLUSIVE lock, so the
-- pipeline keeps writing chunks meanwhile. A build that fails leaves an INVALID index: drop it and migrate
-- again (docs/operations.md).
set lock_timeout = '5s';
set statement_timeout = '30min';
-- squawk assumes a transaction (.squawk.toml); a transaction:false file runs outside one.
-- squawk-ignore ban-concurrent-index-creation-in-transaction
create index concurrently entity_chunks_visibility_idx on entity_chunks (id)
    include (entity_id, source_id, acl_principals, entity_status, entity_deleted);
comment on index entity_chunks_visibility_idx is
    'What search checks of each matching chunk (entity, source, ACL, status, deletion), read by id without the heap (decision 117).';

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
