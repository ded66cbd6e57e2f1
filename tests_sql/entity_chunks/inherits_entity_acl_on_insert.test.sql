-- Trigger _300_inherit_acl copies source, ACL, status and deletion of the entity onto a new chunk, whatever
-- the writer supplied (seed 000: a chunk inherits its entity's ACL, filtered in the same query as search).
begin;
select plan(5);

-- Setup
insert into sources (name, connector_type) values ('Confluence', 'confluence') returning id as source_id \gset
insert into entities (source_id, source_type, source_entity_id, status, content_hash, acl_principals)
values (:source_id, 'page', '42', 'draft', 'h', '{group:confluence:eng,user:anna@example.com}')
returning id as entity_id \gset
insert into entities (source_id, source_type, source_entity_id, status, content_hash, acl_principals, deleted_at)
values (:source_id, 'page', '43', 'final', 'h', '{group:confluence:all}', now())
returning id as deleted_entity_id \gset

-- Test
-- The writer claims wider rights on purpose: the trigger must overwrite them.
insert into entity_chunks (entity_id, ordinal, body, content_hash, embedding, source_id, acl_principals, entity_status)
values (:entity_id, 0, 'first chunk', 'c0', array_fill(0.1::real, array[384])::vector, 0, '{public}', 'final');
select is((select acl_principals from entity_chunks where entity_id = :entity_id), '{group:confluence:eng,user:anna@example.com}'::text[],
    'A new chunk carries the ACL of its entity, not the one supplied by the writer.');
select is((select source_id from entity_chunks where entity_id = :entity_id), :source_id::bigint,
    'A new chunk carries the source of its entity.');
select is((select entity_status from entity_chunks where entity_id = :entity_id), 'draft',
    'A new chunk carries the status of its entity.');
select is((select entity_deleted from entity_chunks where entity_id = :entity_id), false,
    'A chunk of a live entity is not marked deleted.');
insert into entity_chunks (entity_id, ordinal, body, content_hash, source_id, entity_status)
values (:deleted_entity_id, 0, 'chunk of a deleted page', 'c0', 0, 'final');
select is((select entity_deleted from entity_chunks where entity_id = :deleted_entity_id), true,
    'A chunk of a soft-deleted entity is marked deleted.');

select * from finish();
rollback;
