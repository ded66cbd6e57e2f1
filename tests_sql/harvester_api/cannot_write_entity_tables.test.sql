-- Role harvester_api cannot insert, update or delete the content tables: only loading writes the mirror
-- (seed 003 "Зеркало задачи").
begin;
select plan(13);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into entities (source_id, source_type, source_entity_id, status, content_hash)
values (:source_id, 'ticket', '1', 'final', 'h') returning id as entity_id \gset
set local role harvester_api;

-- Test
select throws_ok(
    format($$insert into entities (source_id, source_type, source_entity_id, status, content_hash) values (%s, 'ticket', '2', 'final', 'h')$$, :source_id),
    '42501', 'permission denied for table entities', 'The API role cannot insert entities.');
select throws_ok(
    format($$update entities set title = 'edited by the API' where id = %s$$, :entity_id),
    '42501', 'permission denied for table entities', 'The API role cannot update entities.');
select throws_ok(
    format($$delete from entities where id = %s$$, :entity_id),
    '42501', 'permission denied for table entities', 'The API role cannot delete entities.');
select throws_ok(
    format($$insert into entity_chunks (entity_id, ordinal, body, content_hash, source_id, entity_status) values (%s, 0, 'b', 'c', %s, 'final')$$, :entity_id, :source_id),
    '42501', 'permission denied for table entity_chunks', 'The API role cannot insert chunks.');
select throws_ok(
    $$update entity_chunks set acl_principals = '{public}'$$,
    '42501', 'permission denied for table entity_chunks', 'The API role cannot update chunks.');
select throws_ok(
    $$delete from entity_chunks$$,
    '42501', 'permission denied for table entity_chunks', 'The API role cannot delete chunks.');
select throws_ok(
    format($$insert into entity_edges (from_entity_id, source_id, relation, target_type, target_source_entity_id) values (%s, %s, 'blocks', 'ticket', '2')$$, :entity_id, :source_id),
    '42501', 'permission denied for table entity_edges', 'The API role cannot insert edges.');
select throws_ok(
    $$update entity_edges set relation = 'parent'$$,
    '42501', 'permission denied for table entity_edges', 'The API role cannot update edges.');
select throws_ok(
    $$delete from entity_edges$$,
    '42501', 'permission denied for table entity_edges', 'The API role cannot delete edges.');
select throws_ok(
    format($$insert into entity_refs (entity_id, relation, target_kind, target_ref, source_hint) values (%s, 'mentions', 'mr', '!12', 'gitlab')$$, :entity_id),
    '42501', 'permission denied for table entity_refs', 'The API role cannot insert refs.');
select throws_ok(
    $$update entity_refs set source_hint = 'github'$$,
    '42501', 'permission denied for table entity_refs', 'The API role cannot update refs.');
select throws_ok(
    $$delete from entity_refs$$,
    '42501', 'permission denied for table entity_refs', 'The API role cannot delete refs.');
select throws_ok(
    format($$update live_entities set title = 'through the view' where id = %s$$, :entity_id),
    '42501', 'permission denied for view live_entities', 'The API role cannot write entities through the live_entities view either.');

select * from finish();
rollback;
