-- migrate:up
-- Directory reuse as a platform setting (decision 125, connectors/directories.py): how many seconds a
-- directory a connector reads whole (Slack's users and channels) may serve a later run of the same source
-- in the same process that fetches items by id (webhook deliveries, dead-letter retries). 0 turns reuse
-- off; the cap of an hour bounds how stale a listed person's rights can be on an item loaded by id.
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
    'completeness_tolerance', 'rate_limit_patience', 'takeover_grace', 'fetch_fanout', 'directory_ttl'));
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
    else jsonb_typeof(value) = 'number' and (value #>> '{}')::numeric > 0
        and (value #>> '{}')::numeric = trunc((value #>> '{}')::numeric)
    end);

insert into platform_settings (key, value) values
    ('directory_ttl', '300')  -- seconds a directory read whole serves later by-id runs (connectors/directories.py)
on conflict (key) do nothing;

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
