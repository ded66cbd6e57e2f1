-- Role harvester_worker loads content: it inserts and updates entities, chunks, edges and refs.
begin;
select plan(6);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
set local role harvester_worker;

-- Test
select lives_ok(
    format($$insert into entities (source_id, source_type, source_entity_id, status, content_hash) values (%s, 'ticket', '1', 'final', 'h')$$, :source_id),
    'The worker role inserts an entity.');
select lives_ok(
    format($$insert into entity_chunks (entity_id, ordinal, body, content_hash, source_id, entity_status)
             select id, 0, 'b', 'c', 0, 'final' from entities where source_id = %s$$, :source_id),
    'The worker role inserts a chunk, and its triggers read the entity and store the lexemes.');
select lives_ok(
    format($$update entity_chunks set body = 'b2' where source_id = %s$$, :source_id),
    'The worker role rewrites a chunk text, and its trigger rewrites the lexemes.');
select lives_ok(
    format($$update entities set acl_principals = '{group:jira:dev}' where source_id = %s$$, :source_id),
    'The worker role updates an entity, and its trigger rewrites the chunks.');
select lives_ok(
    format($$insert into entity_edges (from_entity_id, source_id, relation, target_type, target_source_entity_id)
             select id, %s, 'blocks', 'ticket', '2' from entities where source_id = %s$$, :source_id, :source_id),
    'The worker role inserts an edge.');
select lives_ok(
    format($$insert into entity_refs (entity_id, relation, target_kind, target_ref, source_hint)
             select id, 'mentions', 'mr', '!12', 'gitlab' from entities where source_id = %s$$, :source_id),
    'The worker role inserts a ref.');

select * from finish();
rollback;
