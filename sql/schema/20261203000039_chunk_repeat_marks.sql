-- migrate:up
-- The repeats' tiers as lexemes of their own (decision 116). Migration 38 weighted each repeated lexeme by
-- how often its chunk holds it and asked for three times or more with a weight restriction ('word':ABC).
-- A GIN index stores no weights, so every row holding the word twice or more was read and rechecked in the
-- table, and the tier stopped at three: a near stop word (held three times or more by 47 % of a million
-- chunks) still ranked half the table, 2.2 s (bench/search_text.py --query-words 1).
-- - Each repeated lexeme is now stored once, marked by how often: as itself twice, with " 3" appended three
--   to seven times, " 8" eight to twenty, " 21" twenty-one to fifty-four, " 55" fifty-five or more. A tier
--   (e.g. eight times or more: 'word 8' | 'word 21' | 'word 55') is then answered by the index alone. No
--   lexeme of the `russian` configuration holds a space (its parser splits at spaces), so a mark never
--   meets a word. No positions: 266 MiB at a million chunks of 150 words with the index, 312 in the old form.
-- - The function is replaced here, not only in sql/triggers/310_chunk_lexemes.sql, which migrate applies
--   after this transaction commits: a chunk written between the two would otherwise get the old form, and
--   the file fills only the chunks that have no row.
-- - Every chunk's row is derived again from its stored lexemes (no text parsed), with the index built
--   after the fill: about 40 s a million chunks, while chunk writes and text searches wait for the table.
set local lock_timeout = '30s';
set local statement_timeout = '2h';

create or replace function harvester_repeated_lexemes(lexemes tsvector) returns tsvector
    language sql
    immutable strict parallel safe
    set search_path to ''
as $$
    select pg_catalog.array_to_tsvector(coalesce(pg_catalog.array_agg(
               u.lexeme || case when u.n >= 55 then ' 55' when u.n >= 21 then ' 21' when u.n >= 8 then ' 8'
                                when u.n >= 3 then ' 3' else '' end), '{}'))
    from (select r.lexeme, pg_catalog.cardinality(r.positions) as n from pg_catalog.unnest(lexemes) as r) as u
    where u.n > 1;
$$;

comment on column entity_chunk_repeats.lexemes is
    'Each lexeme of entity_chunk_lexemes.lexemes with two or more positions, once, marked by its count: as itself 2, with " 3" 3-7, " 8" 8-20, " 21" 21-54, " 55" 55+; no positions; empty when none repeats.';

-- TRUNCATE holds the table's ACCESS EXCLUSIVE lock to the end of the transaction, so dropping and building
-- the index without CONCURRENTLY blocks nothing more; a build after the fill is faster than GIN inserts.
truncate entity_chunk_repeats;
-- squawk-ignore require-concurrent-index-deletion
drop index entity_chunk_repeats_lexemes_idx;
insert into entity_chunk_repeats (chunk_id, lexemes)
select l.chunk_id, harvester_repeated_lexemes(l.lexemes) from entity_chunk_lexemes l;
-- squawk-ignore require-concurrent-index-creation
create index entity_chunk_repeats_lexemes_idx on entity_chunk_repeats using gin (lexemes);

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
