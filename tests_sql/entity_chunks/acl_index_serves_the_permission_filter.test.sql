-- Index entity_chunks_acl_principals_idx (issue 5, search): a GIN index over the inherited ACL, so the
-- planner can read only the chunks a narrow principal may see instead of scanning the HNSW graph.
begin;
select plan(4);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into entities (source_id, source_type, source_entity_id, status, content_hash, acl_principals)
select :source_id, 'ticket', n::text, 'final', 'h',
       case when n % 100 = 0 then '{group:jira:rare,group:jira:all}'::text[] else '{group:jira:all}'::text[] end
from generate_series(1, 2000) n;
insert into entity_chunks (entity_id, ordinal, body, content_hash)
select id, 0, 'chunk', 'c' from entities where source_id = :source_id;
analyze entity_chunks;
create function pg_temp.plan_of(query text) returns text language plpgsql as $fn$
declare
    line text;
    plan text := '';
begin
    for line in execute 'explain ' || query loop
        plan := plan || line || E'\n';
    end loop;
    return plan;
end;
$fn$;

-- Test
select has_index('public', 'entity_chunks', 'entity_chunks_acl_principals_idx', 'Index entity_chunks_acl_principals_idx exists.');
select is(pg_get_indexdef('public.entity_chunks_acl_principals_idx'::regclass),
    'CREATE INDEX entity_chunks_acl_principals_idx ON public.entity_chunks USING gin (acl_principals)',
    'The ACL index is a GIN index over acl_principals.');
-- A table this small fits in a page or two, where a sequential scan is always cheaper: take that away.
set local enable_seqscan = off;
select matches(pg_temp.plan_of($$select id from entity_chunks where acl_principals && '{group:jira:rare}'::text[]$$),
    'entity_chunks_acl_principals_idx',
    'The ACL overlap filter (&&) is served by the ACL index.');
select is((select count(*)::int from entity_chunks where acl_principals && '{group:jira:rare}'::text[]), 20,
    'The overlap filter finds exactly the chunks the narrow principal may see.');

select * from finish();
rollback;
