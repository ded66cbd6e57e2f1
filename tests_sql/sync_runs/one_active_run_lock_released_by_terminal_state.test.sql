-- Once the active run is succeeded, failed or cancelled, the source may queue a new run (seed 000: cancel
-- terminalises the run, the next one starts fresh).
begin;
select plan(4);

-- Setup
insert into sources (name, connector_type) values ('Released', 'jira') returning id as source_id \gset

-- Test
insert into sync_runs (source_id, mode, trigger) values (:source_id, 'full', 'connect');
update sync_runs set state = 'succeeded', finished_at = now() where source_id = :source_id and state = 'queued';
select lives_ok(
    format($$insert into sync_runs (source_id, mode, trigger) values (%s, 'incremental', 'schedule')$$, :source_id),
    'A run can be queued after the previous one succeeded.');
update sync_runs set state = 'failed', finished_at = now() where source_id = :source_id and state = 'queued';
select lives_ok(
    format($$insert into sync_runs (source_id, mode, trigger) values (%s, 'incremental', 'schedule')$$, :source_id),
    'A run can be queued after the previous one failed.');
update sync_runs set state = 'cancelled', finished_at = now() where source_id = :source_id and state = 'queued';
select lives_ok(
    format($$insert into sync_runs (source_id, mode, trigger) values (%s, 'incremental', 'manual')$$, :source_id),
    'A run can be queued after the previous one was cancelled.');
select results_eq(
    format($$select state from sync_runs where source_id = %s order by id$$, :source_id),
    $$values ('succeeded'), ('failed'), ('cancelled'), ('queued')$$,
    'The source has three terminal runs and one queued run.');

select * from finish();
rollback;
