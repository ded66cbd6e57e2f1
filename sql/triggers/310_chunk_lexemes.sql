-- Re-appliable. entity_chunk_lexemes (migration 37) holds each chunk text under the `russian`
-- configuration (Russian stems for Cyrillic, English for Latin words, both languages' stop words
-- dropped), so the full-text half of hybrid search never parses a chunk's text at query time
-- (decision 113). Triggers, not the statements that write chunks: COPY and any other writer keep it exact.
-- - Inserted chunks: one statement trigger over the statement's new rows (a page of the pipeline is one
--   statement), so a page's lexemes are one INSERT ... SELECT.
-- - A changed text: a row trigger that fires only when the text is set and differs (UPDATE OF body), so
--   the ACL propagation and a new vector never parse anything. (A trigger with a column list cannot have
--   transition tables.)
-- - A deleted chunk takes its row with it (the foreign key's on delete cascade).
-- - entity_chunk_repeats (migration 38, decision 115) holds the lexemes each chunk repeats, taken from the
--   lexemes just stored by the same statement (nothing parsed twice), so a single common word's search can
--   rank the chunks holding it more than once first.
-- Applying this file also fills the lexemes of every chunk that has none: all of them the first time
-- (21.5 s for 100,000 chunks of 150 words, while chunk writes wait for the lock the triggers' creation
-- takes), none later (one anti-join over the chunk ids: 0.7 s); then the repeats of every chunk that has
-- none, from the stored lexemes (the whole migrate 4.6 s for the same 100,000 chunks the first time).

-- The triggers' creation locks entity_chunks; a migrate waits at most this long for the pages being
-- written, then fails and rolls back (run it again). For the rest of the trigger files' transaction.
set local lock_timeout = '30s';
set local statement_timeout = '2h';

-- ts_rank_cd over one term of an unweighted tsvector is 0.1 an occurrence, so these are the lexemes for which
-- a chunk ranks above the chunks holding them once (decision 115). Each is kept once, marked by how often the
-- text holds it (decision 116): as itself twice, with " 3" appended three to seven times, " 8" eight to
-- twenty, " 21" twenty-one to fifty-four, " 55" fifty-five or more. So a tier is a plain OR of marked
-- lexemes ('word 8' | 'word 21' | 'word 55': eight times or more), which the GIN index answers without
-- reading the rows (a weight restriction, migration 38's form, is checked in the table). No lexeme of the
-- `russian` configuration holds a space, so a mark never meets a word. Migration 39 holds a copy of this
-- definition (it refilled the table); this file is the one to change.
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
comment on function harvester_repeated_lexemes(tsvector) is 'The lexemes of a tsvector with two or more positions, each once, marked by its count: itself 2, " 3" 3-7, " 8" 8-20, " 21" 21-54, " 55" 55+ (entity_chunk_repeats).';

create or replace function tg_entity_chunks__lexemes_insert() returns trigger
    language plpgsql
    set search_path to ''
as $$
begin
    with stored as (
        insert into public.entity_chunk_lexemes (chunk_id, lexemes)
        select n.id, to_tsvector('russian'::regconfig, n.body) from new_chunks n
        returning chunk_id, lexemes
    )
    insert into public.entity_chunk_repeats (chunk_id, lexemes)
    select s.chunk_id, public.harvester_repeated_lexemes(s.lexemes) from stored s;
    return null;
end;
$$;
comment on function tg_entity_chunks__lexemes_insert() is 'AFTER INSERT statement trigger on entity_chunks: stores the lexemes of the new chunks and the lexemes each repeats.';

create or replace function tg_entity_chunks__lexemes_update() returns trigger
    language plpgsql
    set search_path to ''
as $$
begin
    with stored as (
        update public.entity_chunk_lexemes
           set lexemes = to_tsvector('russian'::regconfig, new.body)
         where chunk_id = new.id
        returning chunk_id, lexemes
    )
    update public.entity_chunk_repeats r
       set lexemes = public.harvester_repeated_lexemes(s.lexemes)
      from stored s
     where r.chunk_id = s.chunk_id;
    return null;
end;
$$;
comment on function tg_entity_chunks__lexemes_update() is 'AFTER UPDATE OF body row trigger on entity_chunks: stores the lexemes of a changed chunk text and the lexemes it repeats.';

create or replace trigger _310_lexemes_insert after insert on entity_chunks
    referencing new table as new_chunks
    for each statement execute function tg_entity_chunks__lexemes_insert();
create or replace trigger _310_lexemes_update after update of body on entity_chunks
    for each row when (old.body is distinct from new.body)
    execute function tg_entity_chunks__lexemes_update();

-- Chunks without lexemes: every chunk stored before migration 37, the first time; none afterwards.
insert into entity_chunk_lexemes (chunk_id, lexemes)
select c.id, to_tsvector('russian'::regconfig, c.body)
from entity_chunks c
where not exists (select from entity_chunk_lexemes l where l.chunk_id = c.id);

-- Chunks without repeats: every chunk stored before migration 38, the first time; none afterwards.
insert into entity_chunk_repeats (chunk_id, lexemes)
select l.chunk_id, harvester_repeated_lexemes(l.lexemes)
from entity_chunk_lexemes l
where not exists (select from entity_chunk_repeats r where r.chunk_id = l.chunk_id);
