-- migrate:up
-- No orphaned runs (issue 10): a bounded wait for the source's lane, and the typed view of the
-- run_sync jobs of queued runs so the tick can fail a run that no job will ever run.
set lock_timeout = '5s';
set statement_timeout = '60s';

-- lane_wait_max: seconds a run may wait queued for a lane Knowledge Store holds before it fails.
-- The key list is a CHECK, so adding a key replaces it: dropped and re-added in this one transaction, no
-- client ever sees the table without it. platform_settings holds a dozen rows, so validating in the same
-- transaction holds its lock for microseconds.
-- squawk-ignore ban-drop-constraint
alter table platform_settings drop constraint platform_settings_key_known;
alter table platform_settings add constraint platform_settings_key_known check (key in (
    'sync_interval', 'reconcile_interval', 'reconcile_window', 'probe_interval', 'watchdog_silence',
    'timezone', 'mass_delete_share', 'incremental_lookback', 'max_deliveries', 'stale_run_after',
    'webhook_dedupe_ttl', 'search_include_drafts', 'alert_channels', 'alert_dlq_threshold', 'lane_wait_max')) not valid;
-- squawk-ignore constraint-missing-not-valid
alter table platform_settings validate constraint platform_settings_key_known;

-- A positive whole number of seconds: the generic branch of platform_settings_value_valid.
insert into platform_settings (key, value) values ('lane_wait_max', '21600')  -- 6 h
on conflict (key) do nothing;

-- Procrastinate's jobs table comes from the installed package (applied by the runner before our
-- migrations, decision 8), outside sqlc's catalog: this function is the typed, sqlc-visible view of
-- the run_sync jobs of queued runs. EXECUTE keeps the function from binding to the package's table.
create function harvester_queued_run_jobs()
    returns table (run_id bigint, live boolean, last_status text)
    language plpgsql
    stable
    set search_path to ''
as $$
begin
    return query execute $q$
        select r.id,
               coalesce(bool_or(j.status = 'todo' or (j.status = 'doing' and j.worker_id is not null)), false),
               (array_agg(j.status::text order by j.id desc) filter (where j.id is not null))[1]
        from public.sync_runs r
        left join public.procrastinate_jobs j
               on j.task_name = 'harvester:run_sync'
              and j.args ? 'run_id'
              and (j.args ->> 'run_id')::bigint = r.id
        where r.state = 'queued'
        group by r.id
    $q$;
end;
$$;
comment on function harvester_queued_run_jobs() is
    'Each queued run with whether a run_sync job will still run it (todo, or doing on a live worker) and its latest job''s status.';

grant execute on function harvester_queued_run_jobs() to harvester_api, harvester_worker;

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
