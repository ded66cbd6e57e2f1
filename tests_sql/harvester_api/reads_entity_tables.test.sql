-- Role harvester_api reads the content tables and views it serves.
begin;
select plan(7);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into entities (source_id, source_type, source_entity_id, status, content_hash)
values (:source_id, 'ticket', '1', 'final', 'h');
set local role harvester_api;

-- Test
select is((select count(*) from entities where source_id = :source_id), 1::bigint,
    'The API role reads entities.');
select lives_ok($$select * from entity_chunks limit 1$$, 'The API role reads chunks.');
select lives_ok($$select * from entity_edges limit 1$$, 'The API role reads edges.');
select lives_ok($$select * from entity_refs limit 1$$, 'The API role reads refs.');
select is((select count(*) from live_entities where source_id = :source_id), 1::bigint,
    'The API role reads live_entities.');
select is((select health from source_health where source_id = :source_id), 'idle',
    'The API role reads source_health.');
select lives_ok($$select * from sync_run_history limit 1$$, 'The API role reads sync_run_history.');

select * from finish();
rollback;
