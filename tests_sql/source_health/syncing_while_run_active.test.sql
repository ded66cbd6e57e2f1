-- source_health is syncing while the latest run is queued or running, whatever the last probe said.
begin;
select plan(3);

-- Setup
insert into sources (name, connector_type, last_probe_at, last_probe_status)
values ('Jira', 'jira', now(), 'unreachable') returning id as source_id \gset
insert into sync_runs (source_id, mode, trigger, state, finished_at, created_at)
values (:source_id, 'full', 'connect', 'failed', now() - interval '2 hours', now() - interval '2 hours');
insert into sync_runs (source_id, mode, trigger) values (:source_id, 'incremental', 'manual') returning id as run_id \gset

-- Test
select is((select health from source_health where source_id = :source_id), 'syncing',
    'A source whose latest run is queued is syncing.');
update sync_runs set state = 'running', started_at = now() where id = :run_id;
select is((select health from source_health where source_id = :source_id), 'syncing',
    'A source whose latest run is running is syncing.');
select is((select last_run_id from source_health where source_id = :source_id), :run_id::bigint,
    'source_health reports the latest run.');

select * from finish();
rollback;
