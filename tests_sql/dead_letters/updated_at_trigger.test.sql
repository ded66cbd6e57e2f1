-- Trigger _100_timestamps stamps dead_letters.updated_at with now() on every update.
begin;
select plan(1);

-- Setup
insert into sources (name, connector_type) values ('Failing', 'jira') returning id as source_id \gset
insert into dead_letters (source_id, source_type, source_entity_id, reason, updated_at)
values (:source_id, 'ticket', 'PROJ-1', 'unknown', '2000-01-01T00:00:00Z') returning id as dead_letter_id \gset

-- Test
update dead_letters set error_detail = 'still failing' where id = :dead_letter_id;
select is((select updated_at from dead_letters where id = :dead_letter_id), now(),
    'Updating a dead letter moves its updated_at to the transaction time.');

select * from finish();
rollback;
