-- UpsertEntities rewrites and returns exactly the records whose content_hash changed.
begin;
select plan(5);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
-- UpsertEntities from sql/queries/entities.sql, verbatim but for its parameters, wrapped in a
-- session-local function so that its RETURNING rows can be compared.
create function pg_temp.upsert_entities(p_source_id bigint, p_rows jsonb)
    returns table (id bigint, source_type text, source_entity_id text, inserted boolean)
    language sql
as $fn$
insert into entities as e (
    source_id, source_type, source_entity_id, natural_key, container, status, title, body, url, author,
    source_created_at, source_updated_at, metadata, acl_principals, aliases, out_of_scope, content_hash)
select p_source_id::bigint, r.source_type, r.source_entity_id, r.natural_key, r.container, r.status,
       r.title, r.body, r.url, r.author, r.source_created_at, r.source_updated_at, r.metadata,
       r.acl_principals, coalesce(r.aliases, '{}'), r.out_of_scope, r.content_hash
from jsonb_to_recordset(p_rows::jsonb) as r(
    source_type text, source_entity_id text, natural_key text, container text, status text, title text,
    body text, url text, author text, source_created_at timestamptz, source_updated_at timestamptz,
    metadata jsonb, acl_principals text[], aliases text[], out_of_scope boolean, content_hash text)
on conflict on constraint entities_identity_key do update
set natural_key = excluded.natural_key,
    container = excluded.container,
    status = excluded.status,
    title = excluded.title,
    body = excluded.body,
    url = excluded.url,
    author = excluded.author,
    source_created_at = excluded.source_created_at,
    source_updated_at = excluded.source_updated_at,
    metadata = excluded.metadata,
    acl_principals = excluded.acl_principals,
    aliases = excluded.aliases,
    out_of_scope = excluded.out_of_scope,
    content_hash = excluded.content_hash,
    deleted_at = null
where e.content_hash is distinct from excluded.content_hash
   or e.deleted_at is not null
   or e.out_of_scope is distinct from excluded.out_of_scope
returning e.id, e.source_type, e.source_entity_id, (e.xmax = 0) as inserted;
$fn$;
insert into entities (source_id, source_type, source_entity_id, status, title, body, content_hash, updated_at)
values (:source_id, 'ticket', '1', 'draft', 'One', 'v1', 'h1', '2000-01-01T00:00:00Z'),
       (:source_id, 'ticket', '2', 'final', 'Two', 'v1', 'h2', '2000-01-01T00:00:00Z');
select xmin::text as xmin_before from entities where source_id = :source_id and source_entity_id = '1' \gset
savepoint before_reload;
-- Ticket 1 changed (new hash, now final); ticket 2 is unchanged.
\set batch '[{"source_type": "ticket", "source_entity_id": "1", "status": "final", "title": "One, edited", "body": "v2", "metadata": {}, "out_of_scope": false, "content_hash": "h1b"}, {"source_type": "ticket", "source_entity_id": "2", "status": "final", "title": "Two", "body": "v1", "metadata": {}, "out_of_scope": false, "content_hash": "h2"}]'

-- Test
select results_eq(
    format('select source_type, source_entity_id, inserted from pg_temp.upsert_entities(%s, %L)', :source_id, :'batch'),
    $$values ('ticket'::text, '1'::text, false)$$,
    'Only the record with a changed hash is returned, flagged as an update.');
select results_eq(
    format($$select title, status, content_hash from entities where source_id = %s and source_entity_id = '1'$$, :source_id),
    $$values ('One, edited'::text, 'final'::text, 'h1b'::text)$$,
    'The changed record carries the new content, status and hash.');
select isnt((select xmin::text from entities where source_id = :source_id and source_entity_id = '1'), :'xmin_before',
    'The changed record was rewritten.');
select is((select updated_at from entities where source_id = :source_id and source_entity_id = '1'), now(),
    'The changed record has a fresh updated_at.');
select is((select updated_at from entities where source_id = :source_id and source_entity_id = '2'), '2000-01-01T00:00:00Z'::timestamptz,
    'The unchanged record keeps its old updated_at.');

select * from finish();
rollback;
