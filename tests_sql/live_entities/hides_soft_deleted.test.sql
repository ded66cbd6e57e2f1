-- live_entities hides soft-deleted rows while entities keeps them for audit (seed 000 "Удаления").
begin;
select plan(3);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into entities (source_id, source_type, source_entity_id, status, content_hash)
values (:source_id, 'ticket', 'kept', 'final', 'h'), (:source_id, 'ticket', 'gone', 'final', 'h');

-- Test
update entities set deleted_at = now() where source_id = :source_id and source_entity_id = 'gone';
select results_eq(
    format($$select source_entity_id from live_entities where source_id = %s$$, :source_id),
    $$values ('kept'::text)$$,
    'live_entities shows only the entity that is not soft-deleted.');
select is((select count(*) from entities where source_id = :source_id), 2::bigint,
    'The soft-deleted entity is still stored in entities.');
select is((select status from entities where source_id = :source_id and source_entity_id = 'gone'), 'final',
    'Soft deletion leaves the status as it was.');

select * from finish();
rollback;
