-- A failed probe newer than the latest finished run puts the source in error; an older one does not
-- (seed 000: the probe is the one health facet a run cannot give).
begin;
select plan(4);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into sync_runs (source_id, mode, trigger, state, finished_at)
values (:source_id, 'incremental', 'schedule', 'succeeded', now() - interval '1 hour');
insert into sources (name, connector_type, last_probe_at, last_probe_status)
values ('Never run', 'jira', now(), 'auth_failed') returning id as unrun_source_id \gset

-- Test
update sources set last_probe_at = now(), last_probe_status = 'unreachable' where id = :source_id;
select is((select health from source_health where source_id = :source_id), 'error',
    'An unreachable probe after the latest good run puts the source in error.');
update sources set last_probe_at = now(), last_probe_status = 'auth_failed' where id = :source_id;
select is((select health from source_health where source_id = :source_id), 'error',
    'A failed-authentication probe after the latest good run puts the source in error.');
update sources set last_probe_at = now() - interval '2 hours', last_probe_status = 'unreachable' where id = :source_id;
select is((select health from source_health where source_id = :source_id), 'idle',
    'A failed probe older than the latest good run is superseded by the run.');
select is((select health from source_health where source_id = :unrun_source_id), 'error',
    'A failed probe of a source that never ran puts it in error.');

select * from finish();
rollback;
