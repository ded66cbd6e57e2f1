-- A soft-deleted record that shows up again is restored by UpsertEntities even with an equal hash: deleted_at
-- is cleared and the row is returned (seed 000 "Удаления": restore if the record came back).
begin;
select plan(4);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into entities (source_id, source_type, source_entity_id, status, title, body, content_hash, deleted_at)
values (:source_id, 'ticket', '7', 'archived', 'Seven', 'v1', 'h7', now() - interval '1 day');
\set batch '[{"source_type": "ticket", "source_entity_id": "7", "status": "archived", "title": "Seven", "body": "v1", "metadata": {}, "out_of_scope": false, "content_hash": "h7"}]'

-- Test
select results_eq(
    format('select source_type, source_entity_id, inserted from tap_queries.upsert_entities(%s, %L)', :source_id, :'batch'),
    $$values ('ticket'::text, '7'::text, false)$$,
    'A returning soft-deleted record is rewritten and returned although its hash is equal.');
select is((select deleted_at from entities where source_id = :source_id and source_entity_id = '7'), null,
    'The returning record is no longer marked deleted.');
select is((select status from entities where source_id = :source_id and source_entity_id = '7'), 'archived',
    'The returning record keeps its classification status.');
select is((select count(*) from live_entities where source_id = :source_id), 1::bigint,
    'The returning record is visible in live_entities again.');

select * from finish();
rollback;
