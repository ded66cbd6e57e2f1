-- UpsertEntities records provenance (issue 12): a written row gets last_fetched_at and last_run_id; a
-- restored row loses its deletion run and reason.
begin;
select plan(4);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into entities (source_id, source_type, source_entity_id, status, title, body, content_hash, deleted_at, deleted_by_run_id, deleted_reason)
values (:source_id, 'ticket', '7', 'final', 'Seven', 'v1', 'h7', now() - interval '1 day', 41, 'gone_at_source');
\set batch '[{"source_type": "ticket", "source_entity_id": "7", "status": "final", "title": "Seven", "body": "v1", "metadata": {}, "out_of_scope": false, "content_hash": "h7"}, {"source_type": "ticket", "source_entity_id": "8", "status": "final", "title": "Eight", "body": "v1", "metadata": {}, "out_of_scope": false, "content_hash": "h8"}]'

-- Test
select is((select count(*) from tap_queries.upsert_entities(:source_id, :'batch', 42)), 2::bigint,
    'The restored and the new record are both written.');
select results_eq(
    format($$select source_entity_id, last_run_id, last_fetched_at is not null from entities where source_id = %s order by 1$$, :source_id),
    $$values ('7'::text, 42::bigint, true), ('8'::text, 42::bigint, true)$$,
    'Each written record names the run that fetched it and when.');
select is((select deleted_reason from entities where source_id = :source_id and source_entity_id = '7'), null,
    'The restored record has no deletion reason any more.');
select is((select deleted_by_run_id from entities where source_id = :source_id and source_entity_id = '7'), null,
    'The restored record has no deleting run any more.');

select * from finish();
rollback;
