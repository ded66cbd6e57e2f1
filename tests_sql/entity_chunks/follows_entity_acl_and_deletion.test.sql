-- Trigger _300_propagate_acl pushes a changed ACL, status or deletion of an entity down to all its chunks.
begin;
select plan(6);

-- Setup
insert into sources (name, connector_type) values ('Confluence', 'confluence') returning id as source_id \gset
insert into entities (source_id, source_type, source_entity_id, status, content_hash, acl_principals)
values (:source_id, 'page', '42', 'draft', 'h', '{group:confluence:eng}') returning id as entity_id \gset
insert into entities (source_id, source_type, source_entity_id, status, content_hash, acl_principals)
values (:source_id, 'page', '44', 'final', 'h', '{group:confluence:eng}') returning id as other_entity_id \gset
insert into entity_chunks (entity_id, ordinal, body, content_hash, source_id, entity_status)
values (:entity_id, 0, 'a', 'c0', 0, 'x'), (:entity_id, 1, 'b', 'c1', 0, 'x'), (:other_entity_id, 0, 'c', 'c2', 0, 'x');

-- Test
update entities set acl_principals = '{user:anna@example.com}' where id = :entity_id;
select is((select count(*) from entity_chunks where entity_id = :entity_id and acl_principals = '{user:anna@example.com}'), 2::bigint,
    'Narrowing the ACL of an entity narrows it on every chunk.');
select is((select acl_principals from entity_chunks where entity_id = :other_entity_id), '{group:confluence:eng}'::text[],
    'Chunks of other entities keep their own ACL.');
update entities set status = 'final' where id = :entity_id;
select is((select count(*) from entity_chunks where entity_id = :entity_id and entity_status = 'final'), 2::bigint,
    'A new status of the entity reaches every chunk.');
update entities set deleted_at = now() where id = :entity_id;
select is((select count(*) from entity_chunks where entity_id = :entity_id and entity_deleted), 2::bigint,
    'Soft-deleting the entity marks every chunk deleted.');
update entities set deleted_at = null where id = :entity_id;
select is((select count(*) from entity_chunks where entity_id = :entity_id and not entity_deleted), 2::bigint,
    'Restoring the entity unmarks every chunk.');
update entities set acl_principals = null where id = :entity_id;
select is((select count(*) from entity_chunks where entity_id = :entity_id and acl_principals is null), 2::bigint,
    'An entity whose ACL became unknown (NULL) hides its chunks too.');

select * from finish();
rollback;
