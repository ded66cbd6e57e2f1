-- UpsertEntities with an unchanged content_hash returns no row and writes nothing: the row version stays
-- the same (entities.content_hash: "an equal hash means the upsert writes nothing").
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
\set batch '[{"source_type": "ticket", "source_entity_id": "10001", "natural_key": "PROJ-1", "status": "final", "title": "Login fails", "body": "v1", "metadata": {"priority": "high"}, "acl_principals": ["group:jira:dev"], "out_of_scope": false, "content_hash": "h1"}]'
insert into entities (source_id, source_type, source_entity_id, natural_key, status, title, body, metadata,
                      acl_principals, content_hash, updated_at)
values (:source_id, 'ticket', '10001', 'PROJ-1', 'final', 'Login fails', 'v1', '{"priority": "high"}',
        '{group:jira:dev}', 'h1', '2000-01-01T00:00:00Z');
select ctid::text as ctid_before, xmin::text as xmin_before from entities where source_id = :source_id \gset
-- A write after a savepoint gets a subtransaction id, so xmin shows any rewrite made inside this test.
savepoint before_reload;

-- Test
select is_empty(
    format('select * from pg_temp.upsert_entities(%s, %L)', :source_id, :'batch'),
    'Reloading a record with an equal content hash returns no row.');
select is((select xmin::text from entities where source_id = :source_id), :'xmin_before',
    'The row was not rewritten: its xmin is unchanged.');
select is((select ctid::text from entities where source_id = :source_id), :'ctid_before',
    'The row was not rewritten: its ctid is unchanged.');
select is((select updated_at from entities where source_id = :source_id), '2000-01-01T00:00:00Z'::timestamptz,
    'updated_at is untouched because no update happened.');
select is((select count(*) from entities where source_id = :source_id), 1::bigint,
    'The source still holds one row for the record.');

select * from finish();
rollback;
