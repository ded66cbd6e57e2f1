-- migrate:up
-- Fan-out width as a platform setting (issue 15 §1, docs/decisions.md): how many requests of one listing
-- page a connector sends at once (page reads, attachment and file downloads, thread replies). 1 reads one
-- by one; the cap keeps a misconfigured platform from looking like a burst to a source. The rate budget
-- per credential caps the request rate whatever this is.
set lock_timeout = '5s';
set statement_timeout = '60s';

-- Both closed checks grow by one key: each replacement accepts everything the old one did, so no
-- guarantee is lost. platform_settings has a dozen rows; validating in this transaction is instant.
-- squawk-ignore ban-drop-constraint
alter table platform_settings drop constraint platform_settings_key_known;
-- squawk-ignore constraint-missing-not-valid
alter table platform_settings add constraint platform_settings_key_known check (key in (
    'sync_interval', 'reconcile_interval', 'reconcile_window', 'probe_interval', 'watchdog_silence',
    'timezone', 'mass_delete_share', 'incremental_lookback', 'max_deliveries', 'stale_run_after',
    'webhook_dedupe_ttl', 'search_include_drafts', 'alert_channels', 'alert_dlq_threshold', 'lane_wait_max',
    'completeness_tolerance', 'rate_limit_patience', 'takeover_grace', 'fetch_fanout'));
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
    else jsonb_typeof(value) = 'number' and (value #>> '{}')::numeric > 0
        and (value #>> '{}')::numeric = trunc((value #>> '{}')::numeric)
    end);

insert into platform_settings (key, value) values
    ('fetch_fanout', '4')  -- requests of one listing page a connector sends at once (connectors/fanout.py)
on conflict (key) do nothing;

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
