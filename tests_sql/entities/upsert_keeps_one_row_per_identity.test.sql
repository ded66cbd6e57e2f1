-- UpsertEntities keeps exactly one row per identity (source_id, source_type, source_entity_id) however often
-- a record is loaded (seed 000 "идентичность": the loader upserts on this key).
begin;
select plan(5);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into sources (name, connector_type) values ('Confluence', 'confluence') returning id as other_source_id \gset
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
\set v1 '[{"source_type": "ticket", "source_entity_id": "10001", "natural_key": "PROJ-1", "status": "final", "title": "Login fails", "body": "v1", "metadata": {}, "acl_principals": ["group:jira:dev"], "out_of_scope": false, "content_hash": "h1"}, {"source_type": "page", "source_entity_id": "10001", "status": "draft", "title": "Same id, other type", "body": "p", "metadata": {}, "acl_principals": [], "out_of_scope": false, "content_hash": "p1"}]'
\set v2 '[{"source_type": "ticket", "source_entity_id": "10001", "natural_key": "PROJ-1", "status": "final", "title": "Login fails on Safari", "body": "v2", "metadata": {}, "acl_principals": ["group:jira:dev"], "out_of_scope": false, "content_hash": "h2"}]'

-- Test
select results_eq(
    format('select source_type, source_entity_id, inserted from pg_temp.upsert_entities(%s, %L) order by source_type', :source_id, :'v1'),
    $$values ('page'::text, '10001'::text, true), ('ticket', '10001', true)$$,
    'A first batch inserts each record, a page and a ticket sharing an id being different identities.');
select results_eq(
    format('select source_type, source_entity_id, inserted from pg_temp.upsert_entities(%s, %L)', :source_id, :'v2'),
    $$values ('ticket'::text, '10001'::text, false)$$,
    'Loading the ticket again with new content updates it instead of inserting.');
select lives_ok(
    format('select from pg_temp.upsert_entities(%s, %L)', :source_id, :'v2'),
    'Loading the same version a third time succeeds.');
select results_eq(
    format($$select source_type, count(*) from entities where source_id = %s group by source_type order by source_type$$, :source_id),
    $$values ('page'::text, 1::bigint), ('ticket', 1::bigint)$$,
    'After three loads the source holds exactly one row per identity.');
select results_eq(
    format('select source_type, source_entity_id, inserted from pg_temp.upsert_entities(%s, %L) order by source_type', :other_source_id, :'v1'),
    $$values ('page'::text, '10001'::text, true), ('ticket', '10001', true)$$,
    'The same type and id in another source are new identities.');

select * from finish();
rollback;
