-- UpsertEntities rewrites and returns exactly the records whose content_hash changed.
begin;
select plan(5);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into entities (source_id, source_type, source_entity_id, status, title, body, content_hash, updated_at)
values (:source_id, 'ticket', '1', 'draft', 'One', 'v1', 'h1', '2000-01-01T00:00:00Z'),
       (:source_id, 'ticket', '2', 'final', 'Two', 'v1', 'h2', '2000-01-01T00:00:00Z');
select xmin::text as xmin_before from entities where source_id = :source_id and source_entity_id = '1' \gset
savepoint before_reload;
-- Ticket 1 changed (new hash, now final); ticket 2 is unchanged.
\set batch '[{"source_type": "ticket", "source_entity_id": "1", "status": "final", "title": "One, edited", "body": "v2", "metadata": {}, "out_of_scope": false, "content_hash": "h1b"}, {"source_type": "ticket", "source_entity_id": "2", "status": "final", "title": "Two", "body": "v1", "metadata": {}, "out_of_scope": false, "content_hash": "h2"}]'

-- Test
select results_eq(
    format('select source_type, source_entity_id, inserted from tap_queries.upsert_entities(%s, %L)', :source_id, :'batch'),
    $$values ('ticket'::text, '1'::text, false)$$,
    'Only the record with a changed hash is returned, flagged as an update.');
select results_eq(
    format($$select title, status, content_hash from entities where source_id = %s and source_entity_id = '1'$$, :source_id),
    $$values ('One, edited'::text, 'final'::text, 'h1b'::text)$$,
    'The changed record carries the new content, status and hash.');
select isnt((select xmin::text from entities where source_id = :source_id and source_entity_id = '1'), :'xmin_before',
    'The changed record was rewritten.');
select is((select updated_at from entities where source_id = :source_id and source_entity_id = '1'), now(),
    'The changed record has a fresh updated_at.');
select is((select updated_at from entities where source_id = :source_id and source_entity_id = '2'), '2000-01-01T00:00:00Z'::timestamptz,
    'The unchanged record keeps its old updated_at.');

select * from finish();
rollback;
