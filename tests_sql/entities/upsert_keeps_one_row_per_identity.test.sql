-- UpsertEntities keeps exactly one row per identity (source_id, source_type, source_entity_id) however often
-- a record is loaded (seed 000 "идентичность": the loader upserts on this key).
begin;
select plan(5);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into sources (name, connector_type) values ('Confluence', 'confluence') returning id as other_source_id \gset
\set v1 '[{"source_type": "ticket", "source_entity_id": "10001", "natural_key": "PROJ-1", "status": "final", "title": "Login fails", "body": "v1", "metadata": {}, "acl_principals": ["group:jira:dev"], "out_of_scope": false, "content_hash": "h1"}, {"source_type": "page", "source_entity_id": "10001", "status": "draft", "title": "Same id, other type", "body": "p", "metadata": {}, "acl_principals": [], "out_of_scope": false, "content_hash": "p1"}]'
\set v2 '[{"source_type": "ticket", "source_entity_id": "10001", "natural_key": "PROJ-1", "status": "final", "title": "Login fails on Safari", "body": "v2", "metadata": {}, "acl_principals": ["group:jira:dev"], "out_of_scope": false, "content_hash": "h2"}]'

-- Test
select results_eq(
    format('select source_type, source_entity_id, inserted from tap_queries.upsert_entities(%s, %L) order by source_type', :source_id, :'v1'),
    $$values ('page'::text, '10001'::text, true), ('ticket', '10001', true)$$,
    'A first batch inserts each record, a page and a ticket sharing an id being different identities.');
select results_eq(
    format('select source_type, source_entity_id, inserted from tap_queries.upsert_entities(%s, %L)', :source_id, :'v2'),
    $$values ('ticket'::text, '10001'::text, false)$$,
    'Loading the ticket again with new content updates it instead of inserting.');
select lives_ok(
    format('select from tap_queries.upsert_entities(%s, %L)', :source_id, :'v2'),
    'Loading the same version a third time succeeds.');
select results_eq(
    format($$select source_type, count(*) from entities where source_id = %s group by source_type order by source_type$$, :source_id),
    $$values ('page'::text, 1::bigint), ('ticket', 1::bigint)$$,
    'After three loads the source holds exactly one row per identity.');
select results_eq(
    format('select source_type, source_entity_id, inserted from tap_queries.upsert_entities(%s, %L) order by source_type', :other_source_id, :'v1'),
    $$values ('page'::text, '10001'::text, true), ('ticket', '10001', true)$$,
    'The same type and id in another source are new identities.');

select * from finish();
rollback;
