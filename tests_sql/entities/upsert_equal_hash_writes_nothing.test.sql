-- UpsertEntities with an unchanged content_hash returns no row and writes nothing: the row version stays
-- the same (entities.content_hash: "an equal hash means the upsert writes nothing").
begin;
select plan(5);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
\set batch '[{"source_type": "ticket", "source_entity_id": "10001", "natural_key": "PROJ-1", "status": "final", "title": "Login fails", "body": "v1", "metadata": {"priority": "high"}, "acl_principals": ["group:jira:dev"], "out_of_scope": false, "content_hash": "h1"}]'
insert into entities (source_id, source_type, source_entity_id, natural_key, status, title, body, metadata,
                      acl_principals, content_hash, updated_at)
values (:source_id, 'ticket', '10001', 'PROJ-1', 'final', 'Login fails', 'v1', '{"priority": "high"}',
        '{group:jira:dev}', 'h1', '2000-01-01T00:00:00Z');
select ctid::text as ctid_before, xmin::text as xmin_before from entities where source_id = :source_id \gset
-- A write after a savepoint gets a subtransaction id, so xmin shows any rewrite made inside this test.
savepoint before_reload;

-- Test
select is_empty(
    format('select * from tap_queries.upsert_entities(%s, %L)', :source_id, :'batch'),
    'Reloading a record with an equal content hash returns no row.');
select is((select xmin::text from entities where source_id = :source_id), :'xmin_before',
    'The row was not rewritten: its xmin is unchanged.');
select is((select ctid::text from entities where source_id = :source_id), :'ctid_before',
    'The row was not rewritten: its ctid is unchanged.');
select is((select updated_at from entities where source_id = :source_id), '2000-01-01T00:00:00Z'::timestamptz,
    'updated_at is untouched because no update happened.');
select is((select count(*) from entities where source_id = :source_id), 1::bigint,
    'The source still holds one row for the record.');

select * from finish();
rollback;
