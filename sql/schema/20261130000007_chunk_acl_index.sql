-- migrate:up transaction:false
-- Permission filter of search (issue 5): a GIN index over the chunk's inherited ACL. For a principal
-- who sees few chunks the planner reads exactly those through this index and sorts them by distance
-- (exact, and cheaper than an HNSW scan that would visit ~k/share tuples to find k visible ones);
-- for a broad principal it keeps the HNSW scan. Measured in bench/vector_search.py (1 % visibility).
-- transaction:false: the runner sends each statement on its own (CONCURRENTLY refuses a transaction);
-- CONCURRENTLY takes only a SHARE UPDATE EXCLUSIVE lock, so the pipeline keeps writing chunks meanwhile.
set lock_timeout = '5s';
set statement_timeout = '30min';
-- squawk assumes a transaction (.squawk.toml); a transaction:false file runs outside one.
-- squawk-ignore ban-concurrent-index-creation-in-transaction
create index concurrently entity_chunks_acl_principals_idx on entity_chunks using gin (acl_principals);

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
