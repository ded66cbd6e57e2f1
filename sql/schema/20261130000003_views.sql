-- migrate:up
-- Derived facts as views: nothing here is stored (seed 000 "Состояние хранится, здоровье вычисляется").
set lock_timeout = '5s';
set statement_timeout = '60s';

-- Soft-deleted rows stay in entities for audit and restore; every output reads this view.
create view live_entities as
select e.*
from entities e
where e.deleted_at is null;
comment on view live_entities is 'Entities not soft-deleted: what output and search may show (seed 000 "Удаления").';

-- The history "type" is derived from the three run axes (seed 000 "Три оси прогона", seed 001).
create view sync_run_history as
select
    r.*,
    case
        when r.mode = 'full' then 'full'
        when r.mode = 'reconciliation' then 'reconciliation'
        when r.trigger = 'watchdog' then 'partial_resync'
        when r.trigger = 'manual' and r.scope ->> 'kind' = 'items' then 'dlq_retry'
        else 'incremental'
    end as run_type,
    r.finished_at - r.started_at as duration
from sync_runs r;
comment on view sync_run_history is 'sync_runs with run_type (full, incremental, partial_resync, dlq_retry, reconciliation) and duration.';

-- Health is computed from the latest run and the latest probe, never stored (seed 000).
create view source_health as
select
    s.id as source_id,
    s.state,
    lr.id as last_run_id,
    lr.state as last_run_state,
    lr.finished_at as last_run_finished_at,
    lr.error_count as last_run_error_count,
    s.last_probe_at,
    s.last_probe_status,
    case
        when lr.state in ('queued', 'running') then 'syncing'
        when lr.state = 'failed' then 'error'
        when s.last_probe_status in ('unreachable', 'auth_failed')
             and (lr.finished_at is null or s.last_probe_at >= lr.finished_at) then 'error'
        else 'idle'
    end as health
from sources s
left join lateral (
    select r.id, r.state, r.finished_at, r.error_count
    from sync_runs r
    where r.source_id = s.id
    order by r.created_at desc, r.id desc
    limit 1
) lr on true;
comment on view source_health is
    'Per source: idle | syncing | error, from the latest run and the latest probe (a newer failed probe overrides a good run).';

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
