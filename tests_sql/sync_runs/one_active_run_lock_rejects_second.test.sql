-- The partial unique index sync_runs_one_active_per_source lets a source hold one queued or running run
-- (seed 000 "Один активный прогон на источник").
begin;
select plan(5);

-- Setup
insert into sources (name, connector_type) values ('Locked', 'jira') returning id as source_id \gset
insert into sources (name, connector_type) values ('Neighbour', 'jira') returning id as other_source_id \gset
insert into sync_runs (source_id, mode, trigger) values (:source_id, 'full', 'connect') returning id as run_id \gset

-- Test
select throws_ok(
    format($$insert into sync_runs (source_id, mode, trigger) values (%s, 'incremental', 'schedule')$$, :source_id),
    '23505', 'duplicate key value violates unique constraint "sync_runs_one_active_per_source"',
    'A second queued run for a source with a queued run is rejected.');
select throws_ok(
    format($$insert into sync_runs (source_id, mode, trigger, state, started_at) values (%s, 'incremental', 'manual', 'running', now())$$, :source_id),
    '23505', 'duplicate key value violates unique constraint "sync_runs_one_active_per_source"',
    'A running run for a source with a queued run is rejected.');
update sync_runs set state = 'running', started_at = now() where id = :run_id;
select throws_ok(
    format($$insert into sync_runs (source_id, mode, trigger) values (%s, 'incremental', 'webhook')$$, :source_id),
    '23505', 'duplicate key value violates unique constraint "sync_runs_one_active_per_source"',
    'A queued run for a source with a running run is rejected.');
select lives_ok(
    format($$insert into sync_runs (source_id, mode, trigger) values (%s, 'full', 'connect')$$, :other_source_id),
    'Another source may queue its own run at the same time.');
select is((select count(*) from sync_runs where source_id = :source_id), 1::bigint,
    'The locked source still has exactly one run.');

select * from finish();
rollback;
