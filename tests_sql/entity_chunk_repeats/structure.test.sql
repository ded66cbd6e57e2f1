-- Structure of entity_chunk_repeats: the lexemes each chunk text holds more than once, for the full-text
-- half's repeats step (migrations 38 and 39, decisions 115 and 116).
begin;
select plan(24);

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
select is(harvester_repeated_lexemes('''a'':1,3 ''b'':2 ''c'':4,5,9 ''d'''::tsvector), '''a'' ''c 3'''::tsvector,
    'harvester_repeated_lexemes keeps the lexemes with two or more positions, once and without positions: twice as itself, three times marked " 3".');
select is(harvester_repeated_lexemes(to_tsvector('simple', repeat('e ', 4) || repeat('f ', 7) || repeat('g ', 8) || repeat('h ', 20)
                                                 || repeat('i ', 21) || repeat('j ', 54) || repeat('k ', 55) || 'x')),
    '''e 3'' ''f 3'' ''g 8'' ''h 8'' ''i 21'' ''j 21'' ''k 55'''::tsvector,
    'The marks by count: " 3" for 3-7, " 8" for 8-20, " 21" for 21-54, " 55" for 55 or more.');
select is(harvester_repeated_lexemes(E'''it''''s'':1,2 ''a\\\\b'':3,4,5 ''x'':5'::tsvector), E'''it''''s'' ''a\\\\b 3'''::tsvector,
    'Lexemes holding a quote or a backslash come back as they were, marked.');
select is(harvester_repeated_lexemes(''::tsvector), ''::tsvector, 'No lexemes, no repeats (not null).');
select ok(harvester_repeated_lexemes(to_tsvector('simple', repeat('g ', 8) || repeat('c ', 3) || 'a a'))
              @@ '(''g 8'' | ''g 21'' | ''g 55'') & (''c 3'' | ''c 8'' | ''c 21'' | ''c 55'') & ''a'''::tsquery
          and not (harvester_repeated_lexemes(to_tsvector('simple', 'a a')) @@ '''a 3'' | ''a 8'' | ''a 21'' | ''a 55'''::tsquery)
          and not (harvester_repeated_lexemes(to_tsvector('simple', repeat('g ', 8))) @@ '''g 21'' | ''g 55'''::tsquery),
    'A tier is an OR of marked lexemes: eight times or more matches ''g 8'' | ''g 21'' | ''g 55'', and no lower or higher tier.');
-- The marks rest on this: no lexeme of the `russian` configuration holds a space.
select is_empty(
    $$select t.alias from ts_token_type('default') t
      join pg_ts_config_map m on m.maptokentype = t.tokid and m.mapcfg = 'russian'::regconfig
      where t.alias in ('tag', 'blank', 'entity')$$,
    'The russian configuration indexes no token type that may hold a space (tags, blanks, entities).');
select is((select count(*) from unnest(to_tsvector('russian'::regconfig,
              '<a title="x y">a b</a> C:\Program Files\x.txt /home/a b/c.txt e-mail user@host.com http://h.io/a b?q=1 2 1.5 ver 1.2.3 Отчёт  готов'))
           where lexeme like '% %'), 0::bigint,
    'Tags, paths, URLs, addresses, numbers and versions give no lexeme holding a space.');

select * from finish();
rollback;
