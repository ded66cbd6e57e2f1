-- migrate:up
-- A single common word is the full-text half's largest cost left (decision 115): every chunk holding it
-- ties on the number of query terms held, so the steps of decision 114 end at the last one, which ranks
-- every match. At a million chunks of 150 words a word of rank 50-200 (in 11.7 % of the chunks) took
-- 1.2 / 2.4 s (p50 / p95; bench/search_text.py --query-words 1).
-- The chunk text's lexemes carry no weights (to_tsvector, never setweight), so ts_rank_cd over one term
-- is 0.1 for each of its occurrences: a chunk holding the word once is the lowest rank there is, and a
-- chunk holding it twice or more outranks every such chunk. Knowing which words a chunk repeats lets the
-- search rank those chunks first and stop there once they give k entities, with the same answer.
-- - entity_chunk_repeats: one row per chunk, the lexemes its text holds more than once (empty when it
--   repeats none), each at position 1 with a weight that tells how often: D twice, C three times, B four to
--   seven, A eight or more, so that a tsquery's weight restriction ('word':ABC) asks for the chunks holding
--   it at least three times. Derived from entity_chunk_lexemes by the triggers of
--   sql/triggers/310_chunk_lexemes.sql, removed with its chunk (foreign key, on delete cascade).
-- - A table of its own, not a column of entity_chunk_lexemes, for the same reason that table is not a
--   column of entity_chunks (decision 113): filling a new column writes a new version of every row of
--   lexemes, each with new entries in their GIN index; filling this table is one INSERT ... SELECT over
--   the stored lexemes (no text parsed again).
-- - This file creates it empty. The trigger file fills it once, in the transaction that creates the
--   triggers (their creation locks entity_chunks against writes, so no chunk written meanwhile is missed).
set local lock_timeout = '5s';
set local statement_timeout = '5min';

create table entity_chunk_repeats (
    chunk_id bigint   not null,
    lexemes  tsvector not null,
    constraint entity_chunk_repeats_pkey primary key (chunk_id),
    constraint entity_chunk_repeats_chunk_id_fkey foreign key (chunk_id) references entity_chunks (id) on delete cascade
);
comment on table entity_chunk_repeats is
    'The lexemes each chunk text holds more than once, kept by the triggers of sql/triggers/310_chunk_lexemes.sql (decision 115).';
comment on column entity_chunk_repeats.lexemes is
    'The lexemes of entity_chunk_lexemes.lexemes with two or more positions, each at position 1 weighted by its count (D 2, C 3, B 4-7, A 8+); empty when none repeats.';
create index entity_chunk_repeats_lexemes_idx on entity_chunk_repeats using gin (lexemes);

-- The triggers write as the role that writes the chunks: the worker.
grant insert, update on entity_chunk_repeats to harvester_worker;

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
