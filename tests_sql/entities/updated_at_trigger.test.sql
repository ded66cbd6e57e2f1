-- Trigger _100_timestamps stamps entities.updated_at with now() on every update.
begin;
select plan(2);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into entities (source_id, source_type, source_entity_id, status, content_hash, created_at, updated_at)
values (:source_id, 'ticket', '1', 'final', 'h', '2000-01-01T00:00:00Z', '2000-01-01T00:00:00Z')
returning id as entity_id \gset

-- Test
update entities set title = 'Renamed' where id = :entity_id;
select is((select updated_at from entities where id = :entity_id), now(),
    'Updating an entity moves its updated_at to the transaction time.');
select is((select created_at from entities where id = :entity_id), '2000-01-01T00:00:00Z'::timestamptz,
    'Updating an entity leaves its created_at untouched.');

select * from finish();
rollback;
