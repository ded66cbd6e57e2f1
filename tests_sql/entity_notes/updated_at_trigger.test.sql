-- Trigger _100_timestamps stamps entity_notes.updated_at with now() on every update.
begin;
select plan(1);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into entity_notes (source_id, source_type, source_entity_id, owner_note, updated_at)
values (:source_id, 'ticket', 'PROJ-1', 'check with Anna', '2000-01-01T00:00:00Z');

-- Test
update entity_notes set owner_note = 'Anna confirmed' where source_id = :source_id;
select is((select updated_at from entity_notes where source_id = :source_id), now(),
    'Updating a note moves its updated_at to the transaction time.');

select * from finish();
rollback;
