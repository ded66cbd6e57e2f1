-- Structure of run_completeness: per reconciliation and scope unit, source count vs live entities (issue 12).
begin;
select plan(12);

-- Test
select has_table('public', 'run_completeness', 'Table run_completeness exists.');
select columns_are('public', 'run_completeness', array['run_id', 'container', 'source_count', 'live_count'],
    'Table run_completeness has exactly the expected columns.');
select col_type_is('public', 'run_completeness', 'run_id', 'bigint', 'Column run_completeness.run_id is bigint.');
select col_not_null('public', 'run_completeness', 'container', 'Column run_completeness.container is NOT NULL.');
select col_is_null('public', 'run_completeness', 'source_count', 'Column run_completeness.source_count is nullable (the source may not say).');
select col_not_null('public', 'run_completeness', 'live_count', 'Column run_completeness.live_count is NOT NULL.');
select col_is_pk('public', 'run_completeness', array['run_id', 'container'], 'The primary key of run_completeness is (run_id, container).');
select fk_ok('public', 'run_completeness', array['run_id'], 'public', 'sync_runs', array['id'],
    'run_completeness.(run_id) references sync_runs.(id).');
select is((select confdeltype::text from pg_constraint where conrelid = 'public.run_completeness'::regclass and conname = 'run_completeness_run_id_fkey'), 'c',
    'Foreign key run_completeness_run_id_fkey is ON DELETE CASCADE.');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.run_completeness'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('run_completeness_pkey', 'p'), ('run_completeness_run_id_fkey', 'f'),
        ('run_completeness_counts_nonnegative', 'c')$$,
    'Table run_completeness has exactly the expected named constraints.');
select indexes_are('public', 'run_completeness', array['run_completeness_pkey'], 'Table run_completeness has exactly the expected indexes.');
select table_privs_are('public', 'run_completeness', 'harvester_worker', array['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    'The worker role writes run_completeness.');

select * from finish();
rollback;
