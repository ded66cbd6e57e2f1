-- Structure of entity_chunk_repeats: the lexemes each chunk text holds more than once, for the full-text
-- half's repeats step (migration 38, decision 115).
begin;
select plan(22);

-- Test
select has_table('public', 'entity_chunk_repeats', 'Table entity_chunk_repeats exists.');
select columns_are('public', 'entity_chunk_repeats', array['chunk_id', 'lexemes'],
    'Table entity_chunk_repeats has exactly the expected columns.');
select col_type_is('public', 'entity_chunk_repeats', 'chunk_id', 'bigint', 'Column entity_chunk_repeats.chunk_id is bigint.');
select col_not_null('public', 'entity_chunk_repeats', 'chunk_id', 'Column entity_chunk_repeats.chunk_id is NOT NULL.');
select col_type_is('public', 'entity_chunk_repeats', 'lexemes', 'tsvector', 'Column entity_chunk_repeats.lexemes is tsvector.');
select col_not_null('public', 'entity_chunk_repeats', 'lexemes', 'Column entity_chunk_repeats.lexemes is NOT NULL.');
select col_is_pk('public', 'entity_chunk_repeats', array['chunk_id'], 'The primary key of entity_chunk_repeats is (chunk_id).');
select fk_ok('public', 'entity_chunk_repeats', array['chunk_id'], 'public', 'entity_chunks', array['id'],
    'entity_chunk_repeats.(chunk_id) references entity_chunks.(id).');
select is((select confdeltype::text from pg_constraint
           where conrelid = 'public.entity_chunk_repeats'::regclass and conname = 'entity_chunk_repeats_chunk_id_fkey'), 'c',
    'Foreign key entity_chunk_repeats_chunk_id_fkey is ON DELETE CASCADE: a deleted chunk takes its repeats.');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.entity_chunk_repeats'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('entity_chunk_repeats_pkey', 'p'), ('entity_chunk_repeats_chunk_id_fkey', 'f')$$,
    'Table entity_chunk_repeats has exactly the expected named constraints.');
select indexes_are('public', 'entity_chunk_repeats', array['entity_chunk_repeats_pkey', 'entity_chunk_repeats_lexemes_idx'],
    'Table entity_chunk_repeats has exactly the expected indexes.');
select index_is_type('public', 'entity_chunk_repeats', 'entity_chunk_repeats_lexemes_idx', 'gin',
    'Index entity_chunk_repeats_lexemes_idx is a GIN index.');
select is(pg_get_indexdef('public.entity_chunk_repeats_lexemes_idx'::regclass),
    'CREATE INDEX entity_chunk_repeats_lexemes_idx ON public.entity_chunk_repeats USING gin (lexemes)',
    'The repeats'' index covers the repeated lexemes.');
select triggers_are('public', 'entity_chunk_repeats', array[]::name[], 'Table entity_chunk_repeats has no triggers of its own.');
select table_privs_are('public', 'entity_chunk_repeats', 'harvester_worker', array['SELECT', 'INSERT', 'UPDATE'],
    'The worker role inserts and updates repeats (the triggers run as the role that writes chunks); deletes cascade.');
select table_privs_are('public', 'entity_chunk_repeats', 'harvester_api', array['SELECT'],
    'The API role only reads repeats (search).');
select has_function('public', 'harvester_repeated_lexemes', array['tsvector'], 'harvester_repeated_lexemes(tsvector) exists.');
select is(harvester_repeated_lexemes('''a'':1,3 ''b'':2 ''c'':4,5,9 ''d'''::tsvector), '''a'':1 ''c'':1C'::tsvector,
    'harvester_repeated_lexemes keeps the lexemes with two or more positions, each at position 1: D twice, C three times.');
select is(harvester_repeated_lexemes('''e'':1,2,3,4 ''f'':1,2,3,4,5,6,7 ''g'':1,2,3,4,5,6,7,8 ''h'':1,2,3,4,5,6,7,8,9,10'::tsvector),
    '''e'':1B ''f'':1B ''g'':1A ''h'':1A'::tsvector, 'Four to seven occurrences weigh B, eight or more A.');
select is(harvester_repeated_lexemes(E'''it''''s'':1,2 ''a\\\\b'':3,4 ''x'':5'::tsvector), E'''it''''s'':1 ''a\\\\b'':1'::tsvector,
    'Lexemes holding a quote or a backslash come back as they were.');
select is(harvester_repeated_lexemes(''::tsvector), ''::tsvector, 'No lexemes, no repeats (not null).');
select ok('''c'':1C ''e'':1B'::tsvector @@ '''c'':ABC & ''e'':AB'::tsquery
          and not ('''a'':1'::tsvector @@ '''a'':ABC'::tsquery),
    'A weight restriction selects by count: ''word'':ABC matches three or more occurrences, not two.');

select * from finish();
rollback;
