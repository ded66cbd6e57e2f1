-- A run has finished_at exactly when its state is terminal (sync_runs_finished_iff_terminal).
begin;
select plan(6);

-- Setup
insert into sources (name, connector_type) values ('Runs', 'jira') returning id as source_id \gset
insert into sync_runs (source_id, mode, trigger) values (:source_id, 'full', 'connect') returning id as run_id \gset

-- Test
select throws_ok(
    format($$update sync_runs set state = 'succeeded' where id = %s$$, :run_id),
    '23514', 'new row for relation "sync_runs" violates check constraint "sync_runs_finished_iff_terminal"',
    'A succeeded run without finished_at is rejected.');
select throws_ok(
    format($$update sync_runs set state = 'failed' where id = %s$$, :run_id),
    '23514', 'new row for relation "sync_runs" violates check constraint "sync_runs_finished_iff_terminal"',
    'A failed run without finished_at is rejected.');
select throws_ok(
    format($$update sync_runs set state = 'cancelled' where id = %s$$, :run_id),
    '23514', 'new row for relation "sync_runs" violates check constraint "sync_runs_finished_iff_terminal"',
    'A cancelled run without finished_at is rejected.');
select throws_ok(
    format($$update sync_runs set state = 'running', finished_at = now() where id = %s$$, :run_id),
    '23514', 'new row for relation "sync_runs" violates check constraint "sync_runs_finished_iff_terminal"',
    'A running run with finished_at is rejected.');
select throws_ok(
    format($$update sync_runs set finished_at = now() where id = %s$$, :run_id),
    '23514', 'new row for relation "sync_runs" violates check constraint "sync_runs_finished_iff_terminal"',
    'A queued run with finished_at is rejected.');
select lives_ok(
    format($$update sync_runs set state = 'succeeded', finished_at = now() where id = %s$$, :run_id),
    'A succeeded run with finished_at is accepted.');

select * from finish();
rollback;
