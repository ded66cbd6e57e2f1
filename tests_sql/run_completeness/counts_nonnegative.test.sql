-- run_completeness counts are never negative (run_completeness_counts_nonnegative).
begin;
select plan(2);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into sync_runs (source_id, mode, trigger) values (:source_id, 'reconciliation', 'schedule') returning id as run_id \gset

-- Test
select lives_ok(
    format($$insert into run_completeness (run_id, container, source_count, live_count) values (%s, 'ALPHA', null, 3)$$, :run_id),
    'A unit whose source count is unknown is accepted.');
select throws_ok(
    format($$insert into run_completeness (run_id, container, source_count, live_count) values (%s, 'BETA', -1, 3)$$, :run_id),
    '23514', 'new row for relation "run_completeness" violates check constraint "run_completeness_counts_nonnegative"',
    'A negative source count is rejected by run_completeness_counts_nonnegative.');

select * from finish();
rollback;
