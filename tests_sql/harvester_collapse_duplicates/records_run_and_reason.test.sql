-- The two-argument harvester_collapse_duplicates records the run and the reason collapsed_duplicate on the
-- folded row, so it reads differently from a record gone at the source (issue 12 provenance).
begin;
select plan(2);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into entities (source_id, source_type, source_entity_id, natural_key, status, content_hash, aliases) values
    (:source_id, 'ticket', 'NEW-5', 'NEW-5', 'final', 'h', '{OLD-9}'),
    (:source_id, 'ticket', 'OLD-9', 'OLD-9', 'final', 'h', '{}');

-- Test
select is(harvester_collapse_duplicates(:source_id, 77), 1, 'One duplicate is collapsed.');
select results_eq(
    format($$select deleted_by_run_id, deleted_reason from entities where source_id = %s and source_entity_id = 'OLD-9'$$, :source_id),
    $$values (77::bigint, 'collapsed_duplicate'::text)$$,
    'The folded row names the run and the reason collapsed_duplicate.');

select * from finish();
rollback;
