-- Structure of entity_chunk_lexemes: each chunk text's lexemes for the full-text half of hybrid search
-- (migration 37, decision 113).
begin;
select plan(17);

-- Test
select has_table('public', 'entity_chunk_lexemes', 'Table entity_chunk_lexemes exists.');
select columns_are('public', 'entity_chunk_lexemes', array['chunk_id', 'lexemes'],
    'Table entity_chunk_lexemes has exactly the expected columns.');
select col_type_is('public', 'entity_chunk_lexemes', 'chunk_id', 'bigint', 'Column entity_chunk_lexemes.chunk_id is bigint.');
select col_not_null('public', 'entity_chunk_lexemes', 'chunk_id', 'Column entity_chunk_lexemes.chunk_id is NOT NULL.');
select col_type_is('public', 'entity_chunk_lexemes', 'lexemes', 'tsvector', 'Column entity_chunk_lexemes.lexemes is tsvector.');
select col_not_null('public', 'entity_chunk_lexemes', 'lexemes', 'Column entity_chunk_lexemes.lexemes is NOT NULL.');
select col_is_pk('public', 'entity_chunk_lexemes', array['chunk_id'], 'The primary key of entity_chunk_lexemes is (chunk_id).');
select fk_ok('public', 'entity_chunk_lexemes', array['chunk_id'], 'public', 'entity_chunks', array['id'],
    'entity_chunk_lexemes.(chunk_id) references entity_chunks.(id).');
select is((select confdeltype::text from pg_constraint
           where conrelid = 'public.entity_chunk_lexemes'::regclass and conname = 'entity_chunk_lexemes_chunk_id_fkey'), 'c',
    'Foreign key entity_chunk_lexemes_chunk_id_fkey is ON DELETE CASCADE: a deleted chunk takes its lexemes.');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.entity_chunk_lexemes'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('entity_chunk_lexemes_pkey', 'p'), ('entity_chunk_lexemes_chunk_id_fkey', 'f')$$,
    'Table entity_chunk_lexemes has exactly the expected named constraints.');
select indexes_are('public', 'entity_chunk_lexemes', array['entity_chunk_lexemes_pkey', 'entity_chunk_lexemes_lexemes_idx'],
    'Table entity_chunk_lexemes has exactly the expected indexes.');
select index_is_type('public', 'entity_chunk_lexemes', 'entity_chunk_lexemes_lexemes_idx', 'gin',
    'Index entity_chunk_lexemes_lexemes_idx is a GIN index.');
select is(pg_get_indexdef('public.entity_chunk_lexemes_lexemes_idx'::regclass),
    'CREATE INDEX entity_chunk_lexemes_lexemes_idx ON public.entity_chunk_lexemes USING gin (lexemes)',
    'The full-text index covers the stored lexemes.');
select hasnt_index('public', 'entity_chunks', 'entity_chunks_body_fts_idx',
    'The expression index over entity_chunks.body it replaced is gone (one GIN index over the chunk text).');
select triggers_are('public', 'entity_chunk_lexemes', array[]::name[], 'Table entity_chunk_lexemes has no triggers of its own.');
select table_privs_are('public', 'entity_chunk_lexemes', 'harvester_worker', array['SELECT', 'INSERT', 'UPDATE'],
    'The worker role inserts and updates lexemes (the triggers run as the role that writes chunks); deletes cascade.');
select table_privs_are('public', 'entity_chunk_lexemes', 'harvester_api', array['SELECT'],
    'The API role only reads lexemes (search).');

select * from finish();
rollback;
