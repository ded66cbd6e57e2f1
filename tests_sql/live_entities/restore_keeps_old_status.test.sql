-- Clearing deleted_at brings an entity back into live_entities with its old status (seed 000 "Удаления":
-- remove the marker and the previous status returns by itself).
begin;
select plan(4);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into entities (source_id, source_type, source_entity_id, status, content_hash, deleted_at)
values (:source_id, 'page', 'draft-page', 'draft', 'h', now()),
       (:source_id, 'page', 'archived-page', 'archived', 'h', now());

-- Test
select is_empty(
    format($$select 1 from live_entities where source_id = %s$$, :source_id),
    'Both soft-deleted entities are hidden before the restore.');
update entities set deleted_at = null where source_id = :source_id;
select results_eq(
    format($$select source_entity_id, status from live_entities where source_id = %s order by source_entity_id$$, :source_id),
    $$values ('archived-page'::text, 'archived'::text), ('draft-page', 'draft')$$,
    'Both restored entities are live again with their old status.');
select is((select count(*) from live_entities where source_id = :source_id and status = 'archived'), 1::bigint,
    'An archived entity comes back archived, not final: archive and deletion stay separate.');
select is((select count(*) from live_entities where source_id = :source_id and status = 'draft'), 1::bigint,
    'A draft entity comes back as a draft.');

select * from finish();
rollback;
