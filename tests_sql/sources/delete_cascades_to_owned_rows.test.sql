-- Deleting a source removes everything it owns: runs, dead letters, entities with their chunks, edges and
-- refs, and admin notes (ON DELETE CASCADE, seed 000: the queue lives as long as the source).
begin;
select plan(8);

-- Setup
insert into sources (name, connector_type) values ('Doomed', 'jira') returning id as source_id \gset
insert into sources (name, connector_type) values ('Kept', 'jira') returning id as kept_source_id \gset
insert into sync_runs (source_id, mode, trigger, state, finished_at)
values (:source_id, 'full', 'connect', 'succeeded', now()) returning id as run_id \gset
insert into run_seen_items (run_id, source_type, source_entity_id) values (:run_id, 'ticket', '1');
insert into dead_letters (source_id, run_id, source_type, source_entity_id, reason)
values (:source_id, :run_id, 'ticket', '2', 'malformed');
insert into entities (source_id, source_type, source_entity_id, status, content_hash)
values (:source_id, 'ticket', '1', 'final', 'h') returning id as entity_id \gset
insert into entities (source_id, source_type, source_entity_id, status, content_hash)
values (:kept_source_id, 'ticket', '1', 'final', 'h');
insert into entity_chunks (entity_id, ordinal, body, content_hash, source_id, entity_status)
values (:entity_id, 0, 'b', 'c', 0, 'x');
insert into entity_edges (from_entity_id, source_id, relation, target_type, target_source_entity_id)
values (:entity_id, :source_id, 'blocks', 'ticket', '2');
insert into entity_refs (entity_id, relation, target_kind, target_ref) values (:entity_id, 'mentions', 'mr', '!1');
insert into entity_notes (source_id, source_type, source_entity_id, owner_note) values (:source_id, 'ticket', '1', 'n');

-- Test
delete from sources where id = :source_id;
select is((select count(*) from sync_runs where source_id = :source_id), 0::bigint, 'The source''s runs are deleted.');
select is((select count(*) from run_seen_items where run_id = :run_id), 0::bigint, 'The seen-sets of its runs are deleted.');
select is((select count(*) from dead_letters where source_id = :source_id), 0::bigint, 'Its dead letters are deleted.');
select is((select count(*) from entities where source_id = :source_id), 0::bigint, 'Its entities are deleted.');
select is((select count(*) from entity_chunks where entity_id = :entity_id), 0::bigint, 'The chunks of its entities are deleted.');
select is((select count(*) from entity_edges where from_entity_id = :entity_id) + (select count(*) from entity_refs where entity_id = :entity_id),
    0::bigint, 'The edges and refs of its entities are deleted.');
select is((select count(*) from entity_notes where source_id = :source_id), 0::bigint, 'Its admin notes are deleted.');
select is((select count(*) from entities where source_id = :kept_source_id), 1::bigint, 'Another source keeps its entities.');

select * from finish();
rollback;
