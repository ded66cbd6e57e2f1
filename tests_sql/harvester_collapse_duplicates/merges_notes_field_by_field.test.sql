-- Collapsing a duplicate merges its admin note into the survivor's note field by field: the collapsed
-- note's non-empty value wins, an empty or missing one keeps the survivor's; the collapsed note row is
-- deleted (seed 003 "Слияние с заметкой под ключом").
begin;
select plan(8);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into entities (source_id, source_type, source_entity_id, status, content_hash, aliases) values
    (:source_id, 'ticket', 'NEW-5', 'final', 'h', '{OLD-9}'),
    (:source_id, 'ticket', 'OLD-9', 'final', 'h', '{}'),
    (:source_id, 'ticket', 'NEW-6', 'final', 'h', '{OLD-10}'),
    (:source_id, 'ticket', 'OLD-10', 'final', 'h', '{}');
insert into entity_notes (source_id, source_type, source_entity_id, fact_status, work_kind, done_text, rest_text, owner_note, updated_by, updated_at) values
    (:source_id, 'ticket', 'NEW-5', 'in progress', 'bug', 'survivor done', 'survivor rest', 'survivor owner', 'anna', '2026-01-01T00:00:00Z'),
    (:source_id, 'ticket', 'OLD-9', 'done', '', null, 'collapsed rest', '', 'boris', '2026-02-01T00:00:00Z'),
    (:source_id, 'ticket', 'OLD-10', 'blocked', null, null, null, 'moved note', 'boris', '2026-02-01T00:00:00Z');

-- Test
select is(harvester_collapse_duplicates(:source_id), 2,
    'Both duplicates are collapsed.');
select results_eq(
    format($$select fact_status, work_kind, done_text, rest_text, owner_note from entity_notes
              where source_id = %s and source_entity_id = 'NEW-5'$$, :source_id),
    $$values ('done'::text, 'bug'::text, 'survivor done'::text, 'collapsed rest'::text, 'survivor owner'::text)$$,
    'Non-empty fields of the collapsed note win; empty and NULL fields keep the survivor''s values.');
select is((select updated_by from entity_notes where source_id = :source_id and source_entity_id = 'NEW-5'), 'boris',
    'updated_by comes from the later of the two notes.');
select is((select count(*) from entity_notes where source_id = :source_id and source_entity_id = 'OLD-9'), 0::bigint,
    'The collapsed note row is deleted.');
select results_eq(
    format($$select fact_status, owner_note, updated_by from entity_notes
              where source_id = %s and source_entity_id = 'NEW-6'$$, :source_id),
    $$values ('blocked'::text, 'moved note'::text, 'boris'::text)$$,
    'A survivor without a note receives the collapsed note under its own key.');
select is((select count(*) from entity_notes where source_id = :source_id and source_entity_id = 'OLD-10'), 0::bigint,
    'The moved note no longer exists under the collapsed key.');
select is((select count(*) from entity_notes where source_id = :source_id), 2::bigint,
    'One note per surviving record remains.');
select is(
    (select count(*) from entities e join entity_notes n using (source_id, source_type, source_entity_id)
      where e.source_id = :source_id and e.deleted_at is null), 2::bigint,
    'Every remaining note belongs to a live entity.');

select * from finish();
rollback;
