-- migrate:up transaction:false
-- Full-text side of hybrid search (issue 5, item 4): a GIN index over the chunk text under the
-- `russian` text search configuration, which stems Cyrillic words with the Russian Snowball stemmer
-- and Latin words with the English one (its asciiword/asciihword mappings), and drops both
-- languages' stop words, so one expression serves Russian, English and mixed chunks. Queries must
-- repeat the expression exactly (`to_tsvector('russian'::regconfig, body)`) to use the index.
-- An expression index, not a stored generated column: adding a stored column rewrites the whole
-- table under an exclusive lock; the index is built concurrently while syncs keep writing.
-- transaction:false: the runner sends each statement on its own (CONCURRENTLY refuses a transaction);
-- the index build waits for running transactions, hence the long statement timeout.
set lock_timeout = '5s';
set statement_timeout = '30min';
-- squawk assumes a transaction (.squawk.toml); a transaction:false file runs outside one.
-- squawk-ignore ban-concurrent-index-creation-in-transaction
create index concurrently entity_chunks_body_fts_idx on entity_chunks
    using gin (to_tsvector('russian'::regconfig, body));

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
