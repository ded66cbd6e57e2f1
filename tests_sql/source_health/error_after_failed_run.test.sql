-- source_health is error when the latest run failed, even if the last probe was fine (seed 000: failed is a
-- complete failure of the run).
begin;
select plan(2);

-- Setup
insert into sources (name, connector_type, last_probe_at, last_probe_status)
values ('Jira', 'jira', now(), 'ok') returning id as source_id \gset
insert into sync_runs (source_id, mode, trigger, state, finished_at, created_at)
values (:source_id, 'incremental', 'schedule', 'succeeded', now() - interval '2 hours', now() - interval '2 hours');
insert into sync_runs (source_id, mode, trigger, state, finished_at, error_detail)
values (:source_id, 'incremental', 'schedule', 'failed', now() - interval '1 hour', 'source unreachable');

-- Test
select is((select health from source_health where source_id = :source_id), 'error',
    'A source whose latest run failed is in error.');
select is((select last_run_state from source_health where source_id = :source_id), 'failed',
    'source_health reports the failed run as the latest.');

select * from finish();
rollback;
