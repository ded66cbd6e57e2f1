-- A chunk is never visible to more than its entity (comment on entity_chunks.acl_principals): a direct
-- UPDATE of a chunk's inherited columns must not make them differ from the entity.
begin;
select plan(2);

-- Setup
insert into sources (name, connector_type) values ('Confluence', 'confluence') returning id as source_id \gset
insert into entities (source_id, source_type, source_entity_id, status, content_hash, acl_principals, deleted_at)
values (:source_id, 'page', '42', 'final', 'h', '{group:confluence:eng}', now()) returning id as entity_id \gset
insert into entity_chunks (entity_id, ordinal, body, content_hash, source_id, entity_status)
values (:entity_id, 0, 'a', 'c0', 0, 'x');

-- Test
update entity_chunks set acl_principals = '{group:confluence:all}', entity_deleted = false where entity_id = :entity_id;
select is((select acl_principals from entity_chunks where entity_id = :entity_id), '{group:confluence:eng}'::text[],
    'A chunk keeps its entity''s ACL after a direct attempt to widen it.');
select is((select entity_deleted from entity_chunks where entity_id = :entity_id), true,
    'A chunk of a soft-deleted entity stays marked deleted after a direct attempt to unmark it.');

select * from finish();
rollback;
