-- migrate:up
-- What one answer of a source may be, as two platform settings (decision 162). A page was read whole into
-- memory, however large, and inflated whole when compressed: a 2 MiB gzip answer of 2 GiB took a worker's
-- memory. And urllib3's read timeout bounds each wait for a byte, not the answer: a source (or a proxy)
-- sending a byte every few seconds held a run without end, its heartbeat beating. response_max_mib bounds a
-- decoded body (1 MiB to 4 GiB, default 128 MiB: Jira's and Confluence's largest pages are a few MiB);
-- response_max_seconds bounds one answer from its request to its last byte (1 s to an hour, default 300 s:
-- ten read timeouts of 30 s).
set lock_timeout = '5s';
set statement_timeout = '60s';

-- Both closed checks grow by two keys: each replacement accepts everything the old one did, so no
-- guarantee is lost. platform_settings has about twenty rows; validating in this transaction is instant.
-- squawk-ignore ban-drop-constraint
alter table platform_settings drop constraint platform_settings_key_known;
-- squawk-ignore constraint-missing-not-valid
alter table platform_settings add constraint platform_settings_key_known check (key in (
    'sync_interval', 'reconcile_interval', 'reconcile_window', 'probe_interval', 'watchdog_silence',
    'timezone', 'mass_delete_share', 'incremental_lookback', 'max_deliveries', 'stale_run_after',
    'webhook_dedupe_ttl', 'search_include_drafts', 'alert_channels', 'alert_dlq_threshold', 'lane_wait_max',
    'completeness_tolerance', 'rate_limit_patience', 'takeover_grace', 'fetch_fanout', 'directory_ttl',
    'lock_wait_max', 'response_max_mib', 'response_max_seconds'));
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
    when 'response_max_mib' then jsonb_typeof(value) = 'number' and (value #>> '{}')::numeric between 1 and 4096
        and (value #>> '{}')::numeric = trunc((value #>> '{}')::numeric)
    when 'response_max_seconds' then jsonb_typeof(value) = 'number' and (value #>> '{}')::numeric between 1 and 3600
        and (value #>> '{}')::numeric = trunc((value #>> '{}')::numeric)
    else jsonb_typeof(value) = 'number' and (value #>> '{}')::numeric > 0
        and (value #>> '{}')::numeric = trunc((value #>> '{}')::numeric)
    end);

insert into platform_settings (key, value) values
    ('response_max_mib', '128'),     -- MiB one source answer's decoded body may reach (connectors/http.py)
    ('response_max_seconds', '300')  -- seconds from one source request to its answer's last byte
on conflict (key) do nothing;

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
