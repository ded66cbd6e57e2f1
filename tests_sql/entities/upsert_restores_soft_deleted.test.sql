-- A soft-deleted record that shows up again is restored by UpsertEntities even with an equal hash: deleted_at
-- is cleared and the row is returned (seed 000 "Удаления": restore if the record came back).
begin;
select plan(4);

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
insert into entities (source_id, source_type, source_entity_id, status, title, body, content_hash, deleted_at)
values (:source_id, 'ticket', '7', 'archived', 'Seven', 'v1', 'h7', now() - interval '1 day');
\set batch '[{"source_type": "ticket", "source_entity_id": "7", "status": "archived", "title": "Seven", "body": "v1", "metadata": {}, "out_of_scope": false, "content_hash": "h7"}]'

-- Test
select results_eq(
    format('select source_type, source_entity_id, inserted from pg_temp.upsert_entities(%s, %L)', :source_id, :'batch'),
    $$values ('ticket'::text, '7'::text, false)$$,
    'A returning soft-deleted record is rewritten and returned although its hash is equal.');
select is((select deleted_at from entities where source_id = :source_id and source_entity_id = '7'), null,
    'The returning record is no longer marked deleted.');
select is((select status from entities where source_id = :source_id and source_entity_id = '7'), 'archived',
    'The returning record keeps its classification status.');
select is((select count(*) from live_entities where source_id = :source_id), 1::bigint,
    'The returning record is visible in live_entities again.');

select * from finish();
rollback;
