-- source_health is idle when nothing runs and neither the latest run nor a newer probe failed: a run that
-- succeeded with dead letters or was cancelled is not an error (seed 000 "Частичный успех").
begin;
select plan(5);

-- Setup
insert into sources (name, connector_type) values ('New', 'jira') returning id as new_source_id \gset
insert into sources (name, connector_type, last_probe_at, last_probe_status)
values ('Partial', 'jira', now(), 'ok') returning id as source_id \gset
insert into sync_runs (source_id, mode, trigger, state, finished_at, error_count)
values (:source_id, 'full', 'connect', 'succeeded', now() - interval '1 hour', 3) returning id as run_id \gset

-- Test
select is((select health from source_health where source_id = :new_source_id), 'idle',
    'A source that never ran and was never probed is idle.');
select is((select last_run_id from source_health where source_id = :new_source_id), null::bigint,
    'A source that never ran has no latest run.');
select is((select health from source_health where source_id = :source_id), 'idle',
    'A source whose latest run succeeded with dead letters is idle, not in error.');
select is((select last_run_error_count from source_health where source_id = :source_id), 3,
    'source_health carries the error count of the latest run for the badge.');
update sync_runs set state = 'cancelled' where id = :run_id;
select is((select health from source_health where source_id = :source_id), 'idle',
    'A source whose latest run was cancelled is idle.');

select * from finish();
rollback;
