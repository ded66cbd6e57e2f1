-- sync_run_totals holds the modes of sync_runs and only final states (an unfinished run is not a total).
begin;
select plan(2);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset

-- Test
select throws_ok(
    format($$insert into sync_run_totals values (%s, 'partial', 'succeeded', 1, 0, 0, 0, 0, 0, 0)$$, :source_id),
    '23514', 'new row for relation "sync_run_totals" violates check constraint "sync_run_totals_mode_check"',
    'An unknown mode is rejected by sync_run_totals_mode_check.');
select throws_ok(
    format($$insert into sync_run_totals values (%s, 'full', 'running', 1, 0, 0, 0, 0, 0, 0)$$, :source_id),
    '23514', 'new row for relation "sync_run_totals" violates check constraint "sync_run_totals_state_check"',
    'A state that is not final is rejected by sync_run_totals_state_check.');

select * from finish();
rollback;
