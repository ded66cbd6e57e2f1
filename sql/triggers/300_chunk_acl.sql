-- Re-appliable. Seed 000: a chunk inherits its entity's ACL, so rights are filtered in the same
-- query (and the same HNSW scan) as the similarity search. The copy is kept by these triggers only.

create or replace function tg_entity_chunks__inherit_acl() returns trigger
    language plpgsql
    set search_path to ''
as $$
begin
    select e.source_id, e.acl_principals, e.status, e.deleted_at is not null
      into new.source_id, new.acl_principals, new.entity_status, new.entity_deleted
      from public.entities e
     where e.id = new.entity_id;
    return new;
end;
$$;
comment on function tg_entity_chunks__inherit_acl() is 'Copies source, ACL, status and deletion of the parent entity onto a new or moved chunk.';

create or replace trigger _300_inherit_acl
    before insert or update of entity_id, source_id, acl_principals, entity_status, entity_deleted on entity_chunks
    for each row execute function tg_entity_chunks__inherit_acl();

create or replace function tg_entities__propagate_acl() returns trigger
    language plpgsql
    set search_path to ''
as $$
begin
    update public.entity_chunks c
       set acl_principals = new.acl_principals,
           entity_status = new.status,
           entity_deleted = new.deleted_at is not null
     where c.entity_id = new.id;
    return null;
end;
$$;
comment on function tg_entities__propagate_acl() is 'Pushes a changed ACL, status or deletion of an entity down to its chunks.';

create or replace trigger _300_propagate_acl after update of acl_principals, status, deleted_at on entities
    for each row
    when (old.acl_principals is distinct from new.acl_principals
          or old.status is distinct from new.status
          or (old.deleted_at is null) <> (new.deleted_at is null))
    execute function tg_entities__propagate_acl();
