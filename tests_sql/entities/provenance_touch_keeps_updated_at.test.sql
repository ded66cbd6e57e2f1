-- Recording fetch provenance alone (last_fetched_at, last_run_id) does not stamp entities.updated_at; a
-- content change still does (trigger _100_timestamps, issue 12 provenance).
begin;
select plan(2);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into entities (source_id, source_type, source_entity_id, status, content_hash, updated_at)
values (:source_id, 'ticket', '1', 'final', 'h1', '2026-01-01T00:00:00Z');

-- Test
update entities set last_fetched_at = now(), last_run_id = 5 where source_id = :source_id;
select is((select updated_at from entities where source_id = :source_id), '2026-01-01T00:00:00Z'::timestamptz,
    'A provenance-only update keeps updated_at.');
update entities set content_hash = 'h2', last_fetched_at = now() + interval '1 second', last_run_id = 6 where source_id = :source_id;
select is((select updated_at from entities where source_id = :source_id), now(),
    'A content change stamps updated_at.');

select * from finish();
rollback;
