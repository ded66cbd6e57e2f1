-- Structure of dead_letter_totals: dead letters per source and reason, for GET /sources, the queue's
-- summary, metrics and alerts (decision 85).
begin;
select plan(15);

-- Test
select has_table('public', 'dead_letter_totals', 'Table dead_letter_totals exists.');
select columns_are('public', 'dead_letter_totals', array['source_id', 'reason', 'items'],
    'Table dead_letter_totals has exactly the expected columns.');
select col_type_is('public', 'dead_letter_totals', 'source_id', 'bigint', 'Column dead_letter_totals.source_id is bigint.');
select col_type_is('public', 'dead_letter_totals', 'reason', 'text', 'Column dead_letter_totals.reason is text.');
select col_type_is('public', 'dead_letter_totals', 'items', 'bigint', 'Column dead_letter_totals.items is bigint.');
select col_not_null('public', 'dead_letter_totals', 'items', 'Column dead_letter_totals.items is NOT NULL.');
select col_is_pk('public', 'dead_letter_totals', array['source_id', 'reason'],
    'The primary key of dead_letter_totals is (source_id, reason).');
select fk_ok('public', 'dead_letter_totals', array['source_id'], 'public', 'sources', array['id'],
    'dead_letter_totals.(source_id) references sources.(id).');
select is((select confdeltype::text from pg_constraint where conrelid = 'public.dead_letter_totals'::regclass
           and conname = 'dead_letter_totals_source_id_fkey'), 'c',
    'Foreign key dead_letter_totals_source_id_fkey is ON DELETE CASCADE (a deleted source takes its totals).');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.dead_letter_totals'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('dead_letter_totals_pkey', 'p'), ('dead_letter_totals_source_id_fkey', 'f'),
        ('dead_letter_totals_items_positive', 'c')$$,
    'Table dead_letter_totals has exactly the expected named constraints.');
select indexes_are('public', 'dead_letter_totals', array['dead_letter_totals_pkey'],
    'Table dead_letter_totals has exactly the expected indexes (the key''s first column serves the cascade).');
select triggers_are('public', 'dead_letter_totals', array[]::name[], 'Table dead_letter_totals has no triggers of its own.');
select table_privs_are('public', 'dead_letter_totals', 'harvester_worker', array['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    'The worker role writes dead_letter_totals (the triggers run as the role that parks and clears dead letters).');
select table_privs_are('public', 'dead_letter_totals', 'harvester_api', array['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    'The API role writes dead_letter_totals (a source''s deletion cascades to its dead letters as that role).');
select col_not_null('public', 'dead_letter_totals', 'reason', 'Column dead_letter_totals.reason is NOT NULL.');

select * from finish();
rollback;
