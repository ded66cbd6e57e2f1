-- sync_run_history derives run_type from mode + trigger + scope; it is never stored (seed 000 "Три оси
-- прогона": partial re-sync and DLQ retry are incremental runs with a different trigger and scope).
begin;
select plan(8);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset
insert into sync_runs (source_id, mode, trigger, scope, state, finished_at) values
    (:source_id, 'full', 'connect', null, 'succeeded', now()),
    (:source_id, 'full', 'manual', '{"kind": "items", "items": []}', 'succeeded', now()),
    (:source_id, 'reconciliation', 'schedule', null, 'succeeded', now()),
    (:source_id, 'incremental', 'watchdog', '{"kind": "window", "since": "2026-01-01T00:00:00Z"}', 'succeeded', now()),
    (:source_id, 'incremental', 'manual', '{"kind": "items", "items": [{"source_type": "ticket", "source_entity_id": "1"}]}', 'succeeded', now()),
    (:source_id, 'incremental', 'schedule', null, 'succeeded', now()),
    (:source_id, 'incremental', 'webhook', null, 'succeeded', now()),
    (:source_id, 'incremental', 'manual', null, 'succeeded', now());

-- Test
select is((select run_type from sync_run_history where source_id = :source_id and mode = 'full' and trigger = 'connect'), 'full',
    'A full run is of type full.');
select is((select run_type from sync_run_history where source_id = :source_id and mode = 'full' and trigger = 'manual'), 'full',
    'A full run stays full even when started manually with an item scope.');
select is((select run_type from sync_run_history where source_id = :source_id and mode = 'reconciliation'), 'reconciliation',
    'A reconciliation run is of type reconciliation.');
select is((select run_type from sync_run_history where source_id = :source_id and mode = 'incremental' and trigger = 'watchdog'), 'partial_resync',
    'An incremental run raised by the watchdog is a partial re-sync.');
select is((select run_type from sync_run_history where source_id = :source_id and mode = 'incremental' and trigger = 'manual' and scope is not null), 'dlq_retry',
    'A manual incremental run scoped to items is a DLQ retry.');
select is((select run_type from sync_run_history where source_id = :source_id and mode = 'incremental' and trigger = 'schedule'), 'incremental',
    'A scheduled incremental run is of type incremental.');
select is((select run_type from sync_run_history where source_id = :source_id and mode = 'incremental' and trigger = 'webhook'), 'incremental',
    'An incremental run raised by a webhook is of type incremental.');
select is((select run_type from sync_run_history where source_id = :source_id and mode = 'incremental' and trigger = 'manual' and scope is null), 'incremental',
    'A manual incremental run over the whole source is of type incremental, not a DLQ retry.');

select * from finish();
rollback;
