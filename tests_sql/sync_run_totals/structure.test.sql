-- Structure of sync_run_totals: the finished runs summed per source, mode and final state (decision 83).
begin;
select plan(22);

-- Test
select has_table('public', 'sync_run_totals', 'Table sync_run_totals exists.');
select columns_are('public', 'sync_run_totals', array['source_id', 'mode', 'state', 'bucket', 'runs', 'webhook_runs',
    'entities_done', 'api_calls', 'rate_limited', 'duration_sum'],
    'Table sync_run_totals has exactly the expected columns.');
select col_type_is('public', 'sync_run_totals', 'source_id', 'bigint', 'Column sync_run_totals.source_id is bigint.');
select col_type_is('public', 'sync_run_totals', 'runs', 'bigint', 'Column sync_run_totals.runs is bigint.');
select col_type_is('public', 'sync_run_totals', 'entities_done', 'bigint', 'Column sync_run_totals.entities_done is bigint.');
select col_type_is('public', 'sync_run_totals', 'duration_sum', 'numeric',
    'Column sync_run_totals.duration_sum is numeric (a deleted run subtracts exactly).');
select col_type_is('public', 'sync_run_totals', 'bucket', 'integer', 'Column sync_run_totals.bucket is integer.');
select col_not_null('public', 'sync_run_totals', 'mode', 'Column sync_run_totals.mode is NOT NULL.');
select col_not_null('public', 'sync_run_totals', 'state', 'Column sync_run_totals.state is NOT NULL.');
select col_not_null('public', 'sync_run_totals', 'webhook_runs', 'Column sync_run_totals.webhook_runs is NOT NULL.');
select col_not_null('public', 'sync_run_totals', 'api_calls', 'Column sync_run_totals.api_calls is NOT NULL.');
select col_not_null('public', 'sync_run_totals', 'rate_limited', 'Column sync_run_totals.rate_limited is NOT NULL.');
select col_not_null('public', 'sync_run_totals', 'bucket', 'Column sync_run_totals.bucket is NOT NULL.');
select col_is_pk('public', 'sync_run_totals', array['source_id', 'mode', 'state', 'bucket'],
    'The primary key of sync_run_totals is (source_id, mode, state, bucket).');
select fk_ok('public', 'sync_run_totals', array['source_id'], 'public', 'sources', array['id'],
    'sync_run_totals.(source_id) references sources.(id).');
select is((select confdeltype::text from pg_constraint where conrelid = 'public.sync_run_totals'::regclass
           and conname = 'sync_run_totals_source_id_fkey'), 'c',
    'Foreign key sync_run_totals_source_id_fkey is ON DELETE CASCADE (a deleted source takes its totals).');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.sync_run_totals'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('sync_run_totals_pkey', 'p'), ('sync_run_totals_source_id_fkey', 'f'),
        ('sync_run_totals_mode_check', 'c'), ('sync_run_totals_state_check', 'c'),
        ('sync_run_totals_counts_not_negative', 'c'), ('sync_run_totals_bucket_range', 'c')$$,
    'Table sync_run_totals has exactly the expected named constraints.');
select indexes_are('public', 'sync_run_totals', array['sync_run_totals_pkey'], 'Table sync_run_totals has exactly the expected indexes.');
select triggers_are('public', 'sync_run_totals', array[]::name[], 'Table sync_run_totals has no triggers of its own.');
select table_privs_are('public', 'sync_run_totals', 'harvester_worker', array['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    'The worker role writes sync_run_totals (the triggers run as the role that changed the run).');
select table_privs_are('public', 'sync_run_totals', 'harvester_api', array['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    'The API role writes sync_run_totals (it queues and cancels runs; the triggers run as that role).');
select has_function('public', 'harvester_run_totals_merge', array['sync_run_totals[]'],
    'harvester_run_totals_merge(sync_run_totals[]) exists.');

select * from finish();
rollback;
