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
-- Applying this file also fills the lexemes of every chunk that has none: all of them the first time
-- (21.5 s for 100,000 chunks of 150 words, while chunk writes wait for the lock the triggers' creation
-- takes), none later (one anti-join over the chunk ids: 0.7 s).

-- The triggers' creation locks entity_chunks; a migrate waits at most this long for the pages being
-- written, then fails and rolls back (run it again). For the rest of the trigger files' transaction.
set local lock_timeout = '30s';
set local statement_timeout = '2h';

create or replace function tg_entity_chunks__lexemes_insert() returns trigger
    language plpgsql
    set search_path to ''
as $$
begin
    insert into public.entity_chunk_lexemes (chunk_id, lexemes)
    select n.id, to_tsvector('russian'::regconfig, n.body) from new_chunks n;
    return null;
end;
$$;
comment on function tg_entity_chunks__lexemes_insert() is 'AFTER INSERT statement trigger on entity_chunks: stores the lexemes of the new chunks.';

create or replace function tg_entity_chunks__lexemes_update() returns trigger
    language plpgsql
    set search_path to ''
as $$
begin
    update public.entity_chunk_lexemes
       set lexemes = to_tsvector('russian'::regconfig, new.body)
     where chunk_id = new.id;
    return null;
end;
$$;
comment on function tg_entity_chunks__lexemes_update() is 'AFTER UPDATE OF body row trigger on entity_chunks: stores the lexemes of a changed chunk text.';

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
