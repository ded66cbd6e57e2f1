-- migrate:up
-- How long a run waits for a lock another session holds, as a platform setting (decision 159): a page's
-- write blocked by a table lock (LOCK TABLE, a CREATE INDEX without CONCURRENTLY, VACUUM FULL) used to wait
-- without end, holding its run's row, so the heartbeat, a takeover and a cancel waited behind it too. A run
-- now sets PostgreSQL's lock_timeout to this many seconds on its connections and ends failed, naming the
-- holders, when one wait runs out. The cap of an hour is far above any wait a run should sit through; the
-- default of 60 s stays under stale_run_after (120 s), so a run waiting on a lock is never taken for dead.
set lock_timeout = '5s';
set statement_timeout = '60s';

-- Both closed checks grow by one key: each replacement accepts everything the old one did, so no
-- guarantee is lost. platform_settings has about twenty rows; validating in this transaction is instant.
-- squawk-ignore ban-drop-constraint
alter table platform_settings drop constraint platform_settings_key_known;
-- squawk-ignore constraint-missing-not-valid
alter table platform_settings add constraint platform_settings_key_known check (key in (
    'sync_interval', 'reconcile_interval', 'reconcile_window', 'probe_interval', 'watchdog_silence',
    'timezone', 'mass_delete_share', 'incremental_lookback', 'max_deliveries', 'stale_run_after',
    'webhook_dedupe_ttl', 'search_include_drafts', 'alert_channels', 'alert_dlq_threshold', 'lane_wait_max',
    'completeness_tolerance', 'rate_limit_patience', 'takeover_grace', 'fetch_fanout', 'directory_ttl',
    'lock_wait_max'));
-- squawk-ignore ban-drop-constraint
alter table platform_settings drop constraint platform_settings_value_valid;
-- squawk-ignore constraint-missing-not-valid
alter table platform_settings add constraint platform_settings_value_valid check (case key
    when 'timezone' then jsonb_typeof(value) = 'string' and length(value #>> '{}') between 1 and 64
    when 'mass_delete_share' then jsonb_typeof(value) = 'number' and (value #>> '{}')::numeric > 0 and (value #>> '{}')::numeric <= 1
    when 'completeness_tolerance' then jsonb_typeof(value) = 'number' and (value #>> '{}')::numeric >= 0 and (value #>> '{}')::numeric <= 1
    when 'reconcile_window' then jsonb_typeof(value) = 'number' and (value #>> '{}')::numeric between 0 and 10079
        and (value #>> '{}')::numeric = trunc((value #>> '{}')::numeric)
    when 'search_include_drafts' then jsonb_typeof(value) = 'boolean'
    when 'alert_channels' then public.harvester_alert_channels_valid(value)
    when 'fetch_fanout' then jsonb_typeof(value) = 'number' and (value #>> '{}')::numeric between 1 and 16
        and (value #>> '{}')::numeric = trunc((value #>> '{}')::numeric)
    when 'directory_ttl' then jsonb_typeof(value) = 'number' and (value #>> '{}')::numeric between 0 and 3600
        and (value #>> '{}')::numeric = trunc((value #>> '{}')::numeric)
    when 'lock_wait_max' then jsonb_typeof(value) = 'number' and (value #>> '{}')::numeric between 1 and 3600
        and (value #>> '{}')::numeric = trunc((value #>> '{}')::numeric)
    else jsonb_typeof(value) = 'number' and (value #>> '{}')::numeric > 0
        and (value #>> '{}')::numeric = trunc((value #>> '{}')::numeric)
    end);

insert into platform_settings (key, value) values
    ('lock_wait_max', '60')  -- seconds a run's statement waits for another session's lock (app/pipeline/run.py)
on conflict (key) do nothing;

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
