-- sync_runs.mode, the fetch strategy, takes exactly full | incremental | reconciliation (seed 000 §2).
begin;
select plan(4);

-- Setup
insert into sources (name, connector_type) values ('Runs', 'jira') returning id as source_id \gset

-- Test
-- Terminal runs, so the one-active-run lock does not interfere.
select lives_ok(
    format($$insert into sync_runs (source_id, mode, trigger, state, finished_at) values (%s, 'full', 'connect', 'succeeded', now())$$, :source_id),
    'A full run is accepted.');
select lives_ok(
    format($$insert into sync_runs (source_id, mode, trigger, state, finished_at) values (%s, 'incremental', 'schedule', 'succeeded', now())$$, :source_id),
    'An incremental run is accepted.');
select lives_ok(
    format($$insert into sync_runs (source_id, mode, trigger, state, finished_at) values (%s, 'reconciliation', 'schedule', 'succeeded', now())$$, :source_id),
    'A reconciliation run is accepted.');
select throws_ok(
    format($$insert into sync_runs (source_id, mode, trigger, state, finished_at) values (%s, 'dlq_retry', 'manual', 'succeeded', now())$$, :source_id),
    '23514', 'new row for relation "sync_runs" violates check constraint "sync_runs_mode_check"',
    'A derived history type such as dlq_retry is rejected as a mode by sync_runs_mode_check.');

select * from finish();
rollback;
