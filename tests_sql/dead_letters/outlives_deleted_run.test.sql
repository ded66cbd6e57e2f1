-- Deleting a run keeps its dead letters with run_id NULL; deleting the source removes them (seed 000 §3:
-- SET NULL survives journal clean-up, CASCADE: the queue lives as long as the source).
begin;
select plan(3);

-- Setup
insert into sources (name, connector_type) values ('Failing', 'jira') returning id as source_id \gset
insert into sync_runs (source_id, mode, trigger, state, finished_at)
values (:source_id, 'incremental', 'schedule', 'succeeded', now()) returning id as run_id \gset
insert into dead_letters (source_id, run_id, source_type, source_entity_id, reason)
values (:source_id, :run_id, 'ticket', 'PROJ-1', 'malformed');

-- Test
delete from sync_runs where id = :run_id;
select is((select count(*) from dead_letters where source_id = :source_id), 1::bigint,
    'The dead letter survives the deletion of its run.');
select is((select run_id from dead_letters where source_id = :source_id), null::bigint,
    'The surviving dead letter no longer points at a run.');
delete from sources where id = :source_id;
select is((select count(*) from dead_letters where source_id = :source_id), 0::bigint,
    'Deleting the source removes its dead letters.');

select * from finish();
rollback;
