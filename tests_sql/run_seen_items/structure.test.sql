-- Structure of run_seen_items: identities enumerated by a full or reconciliation run.
begin;
select plan(14);

-- Test
select has_table('public', 'run_seen_items', 'Table run_seen_items exists.');
select columns_are('public', 'run_seen_items', array['run_id', 'source_type', 'source_entity_id'],
    'Table run_seen_items has exactly the expected columns.');
select col_type_is('public', 'run_seen_items', 'run_id', 'bigint', 'Column run_seen_items.run_id is bigint.');
select col_not_null('public', 'run_seen_items', 'run_id', 'Column run_seen_items.run_id is NOT NULL.');
select col_type_is('public', 'run_seen_items', 'source_type', 'text', 'Column run_seen_items.source_type is text.');
select col_not_null('public', 'run_seen_items', 'source_type', 'Column run_seen_items.source_type is NOT NULL.');
select col_type_is('public', 'run_seen_items', 'source_entity_id', 'text', 'Column run_seen_items.source_entity_id is text.');
select col_not_null('public', 'run_seen_items', 'source_entity_id', 'Column run_seen_items.source_entity_id is NOT NULL.');
select has_pk('public', 'run_seen_items', 'Table run_seen_items has a primary key.');
select col_is_pk('public', 'run_seen_items', array['run_id', 'source_type', 'source_entity_id'], 'The primary key of run_seen_items is (run_id, source_type, source_entity_id).');
select fk_ok('public', 'run_seen_items', array['run_id'], 'public', 'sync_runs', array['id'],
    'run_seen_items.(run_id) references sync_runs.(id).');
select is((select confdeltype::text from pg_constraint where conrelid = 'public.run_seen_items'::regclass and conname = 'run_seen_items_run_id_fkey'), 'c',
    'Foreign key run_seen_items_run_id_fkey is ON DELETE CASCADE.');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.run_seen_items'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('run_seen_items_run_id_fkey', 'f'),
        ('run_seen_items_pkey', 'p')$$,
    'Table run_seen_items has exactly the expected named constraints.');
select indexes_are('public', 'run_seen_items', array['run_seen_items_pkey'], 'Table run_seen_items has exactly the expected indexes.');

select * from finish();
rollback;
