-- harvester_collapse_duplicates soft-deletes a live entity named in another live entity's aliases and returns
-- how many it collapsed (seed 001 aggressive resolve: a Jira issue moved between projects).
begin;
select plan(6);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into sources (name, connector_type) values ('Other Jira', 'jira') returning id as other_source_id \gset
insert into entities (source_id, source_type, source_entity_id, natural_key, status, content_hash, aliases) values
    (:source_id, 'ticket', 'NEW-5', 'NEW-5', 'final', 'h', '{OLD-9}'),
    (:source_id, 'ticket', 'OLD-9', 'OLD-9', 'draft', 'h', '{}'),
    (:source_id, 'ticket', 'LONE-1', 'LONE-1', 'final', 'h', '{}'),
    (:source_id, 'page', 'OLD-9', null, 'final', 'h', '{}'),
    (:other_source_id, 'ticket', 'OLD-9', 'OLD-9', 'final', 'h', '{}');

-- Test
select is(harvester_collapse_duplicates(:source_id), 1,
    'One duplicate is collapsed and counted.');
select results_eq(
    format($$select source_type, source_entity_id from live_entities where source_id = %s order by 1, 2$$, :source_id),
    $$values ('page'::text, 'OLD-9'::text), ('ticket', 'LONE-1'), ('ticket', 'NEW-5')$$,
    'The aliased ticket is gone from live_entities; the survivor, an unrelated ticket and a page with the same id stay.');
select isnt((select deleted_at from entities where source_id = :source_id and source_type = 'ticket' and source_entity_id = 'OLD-9'), null,
    'The duplicate is soft-deleted, not removed.');
select is((select status from entities where source_id = :source_id and source_type = 'ticket' and source_entity_id = 'OLD-9'), 'draft',
    'The duplicate keeps its status.');
select is((select deleted_at from entities where source_id = :other_source_id), null,
    'An entity of another source with the aliased id is untouched.');
select is(harvester_collapse_duplicates(:source_id), 0,
    'A second call finds nothing left to collapse.');

select * from finish();
rollback;
