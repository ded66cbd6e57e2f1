-- UpsertDeadLetters replaces reason and error_detail with those of the latest failure and moves updated_at
-- (seed 000: "обновляет строку (attempts, updated_at, свежая reason)").
begin;
select plan(4);

-- Setup
insert into sources (name, connector_type) values ('Failing', 'jira') returning id as source_id \gset
insert into sync_runs (source_id, mode, trigger, state, finished_at)
values (:source_id, 'incremental', 'schedule', 'succeeded', now()) returning id as run_1 \gset
insert into sync_runs (source_id, mode, trigger, state, finished_at)
values (:source_id, 'incremental', 'schedule', 'succeeded', now()) returning id as run_2 \gset
insert into dead_letters (source_id, run_id, source_type, source_entity_id, reason, error_detail, created_at, updated_at)
values (:source_id, :run_1, 'ticket', 'PROJ-9', 'rate_limited', '429 after 5 tries', '2000-01-01T00:00:00Z', '2000-01-01T00:00:00Z');

-- Test
-- The UpsertDeadLetters statement with its parameters replaced by literals.
select tap_queries.upsert_dead_letter(:source_id::bigint, :run_2::bigint, 'ticket'::text, 'PROJ-9'::text, 'permission'::text, '403 Forbidden'::text);
select is((select reason from dead_letters where source_entity_id = 'PROJ-9'), 'permission',
    'The reason of the latest failure replaces the old one.');
select is((select error_detail from dead_letters where source_entity_id = 'PROJ-9'), '403 Forbidden',
    'The error detail of the latest failure replaces the old one.');
select is((select updated_at from dead_letters where source_entity_id = 'PROJ-9'), now(),
    'updated_at marks the latest failure.');
select is((select created_at from dead_letters where source_entity_id = 'PROJ-9'), '2000-01-01T00:00:00Z'::timestamptz,
    'created_at keeps the time the item was first parked.');

select * from finish();
rollback;
