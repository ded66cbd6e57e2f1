-- migrate:up transaction:false
-- The full-text half of hybrid search reads stored lexemes instead of parsing each chunk's text again for
-- every match (decision 113). Since migration 6 the chunk text was matched through an expression index
-- (entity_chunks_body_fts_idx on to_tsvector('russian', body)) and ranked with ts_rank_cd over the same
-- expression, so every matching chunk was parsed and stemmed at query time, its text carried through the
-- ranking. With Zipf-distributed text of 150 words a chunk, three words of rank 200-1,000 match 7 % of
-- the chunks: at 100,000 chunks that query took 0.9-1.5 s, against 49-119 ms over stored lexemes (p50-p95;
-- same rows, same order; bench/search_text.py).
-- - entity_chunk_lexemes: one row per chunk, to_tsvector('russian', body), written by the triggers of
--   sql/triggers/310_chunk_lexemes.sql whoever writes chunks (the pipeline, COPY, a DBA), removed with its
--   chunk (foreign key, on delete cascade).
-- - A table of its own, not a column of entity_chunks: filling a new column writes a new version of every
--   chunk, each with a new entry in the HNSW index, and a scratch run of that (100,000 chunks with random
--   vectors) took 898 s and grew the table by 60 %; filling this table is an INSERT ... SELECT (16-22 s
--   for the same 100,000 chunks with its index), and the query is as fast (a join by the chunk's primary
--   key).
-- - This file creates it empty. The trigger file fills it once, in the transaction that creates the
--   triggers: their creation locks entity_chunks against writes, so no chunk written meanwhile is missed;
--   syncs wait for it (21.5 s for 100,000 chunks of 150 words, a scratch run of `harvester db migrate`).
-- - entity_chunks_body_fts_idx is dropped: the lexemes' index replaces it, one GIN index over the text as
--   before. A search of the previous version (still running until its restart) falls back to parsing.
-- transaction:false: the runner sends each statement on its own (DROP INDEX CONCURRENTLY refuses a
-- transaction); the new table is created, indexed and granted before anything reads or writes it.
set lock_timeout = '5s';
set statement_timeout = '30min';

create table entity_chunk_lexemes (
    chunk_id bigint   not null,
    lexemes  tsvector not null,
    constraint entity_chunk_lexemes_pkey primary key (chunk_id),
    constraint entity_chunk_lexemes_chunk_id_fkey foreign key (chunk_id) references entity_chunks (id) on delete cascade
);
comment on table entity_chunk_lexemes is
    'The lexemes of each chunk text for full-text search, kept by the triggers of sql/triggers/310_chunk_lexemes.sql (decision 113).';
comment on column entity_chunk_lexemes.lexemes is
    'to_tsvector(''russian'', entity_chunks.body): Russian stems for Cyrillic, English for Latin words, positions kept for ts_rank_cd.';
-- squawk-ignore require-concurrent-index-creation
create index entity_chunk_lexemes_lexemes_idx on entity_chunk_lexemes using gin (lexemes);

-- The triggers write as the role that writes the chunks: the worker.
grant insert, update on entity_chunk_lexemes to harvester_worker;

drop index concurrently entity_chunks_body_fts_idx;

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
