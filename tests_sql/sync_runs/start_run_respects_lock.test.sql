-- StartRun (sql/queries/runs.sql) returns the new run's id, or no row while the source has an active run.
begin;
select plan(5);

-- Setup
insert into sources (name, connector_type) values ('Started', 'jira') returning id as source_id \gset

-- Test
-- The StartRun statement with its parameters replaced by literals.
select isnt_empty(
    format($$insert into sync_runs (source_id, mode, trigger, scope, options)
             values (%s::bigint, 'full'::text, 'connect'::text, null::jsonb, coalesce(null::jsonb, '{}'::jsonb))
             on conflict (source_id) where state in ('queued', 'running') do nothing
             returning id$$, :source_id),
    'StartRun returns an id for a source without an active run.');
select is_empty(
    format($$insert into sync_runs (source_id, mode, trigger, scope, options)
             values (%s::bigint, 'incremental'::text, 'schedule'::text, null::jsonb, coalesce(null::jsonb, '{}'::jsonb))
             on conflict (source_id) where state in ('queued', 'running') do nothing
             returning id$$, :source_id),
    'StartRun returns no row while the source has a queued run.');
update sync_runs set state = 'running', started_at = now() where source_id = :source_id;
select is_empty(
    format($$insert into sync_runs (source_id, mode, trigger, scope, options)
             values (%s::bigint, 'incremental'::text, 'manual'::text, '{"kind": "items", "items": []}'::jsonb, coalesce(null::jsonb, '{}'::jsonb))
             on conflict (source_id) where state in ('queued', 'running') do nothing
             returning id$$, :source_id),
    'StartRun returns no row while the source has a running run.');
update sync_runs set state = 'cancelled', finished_at = now() where source_id = :source_id;
select isnt_empty(
    format($$insert into sync_runs (source_id, mode, trigger, scope, options)
             values (%s::bigint, 'incremental'::text, 'manual'::text, null::jsonb, coalesce(null::jsonb, '{}'::jsonb))
             on conflict (source_id) where state in ('queued', 'running') do nothing
             returning id$$, :source_id),
    'StartRun returns an id again once the active run was cancelled.');
select is((select count(*) from sync_runs where source_id = :source_id), 2::bigint,
    'Only the two accepted StartRun calls created runs.');

select * from finish();
rollback;
