-- migrate:up
-- Fenced run lease (issue 11 §1): a stale run is taken over only `takeover_grace` seconds after its
-- heartbeat went stale, so a holder that is slow (a long page, a GC pause, a network hiccup) but alive
-- is not raced by a second worker. The lease generation is sync_runs.deliveries (one claim, one
-- generation, docs/decisions.md); this migration only adds the setting and documents the column.
set lock_timeout = '5s';
set statement_timeout = '60s';

-- The closed key set grows by one key: the replacement accepts everything the old one did, so no
-- guarantee is lost. platform_settings has a dozen rows; validating in this transaction is instant.
-- squawk-ignore ban-drop-constraint
alter table platform_settings drop constraint platform_settings_key_known;
-- squawk-ignore constraint-missing-not-valid
alter table platform_settings add constraint platform_settings_key_known check (key in (
    'sync_interval', 'reconcile_interval', 'reconcile_window', 'probe_interval', 'watchdog_silence',
    'timezone', 'mass_delete_share', 'incremental_lookback', 'max_deliveries', 'stale_run_after',
    'webhook_dedupe_ttl', 'search_include_drafts', 'alert_channels', 'alert_dlq_threshold', 'lane_wait_max',
    'completeness_tolerance', 'rate_limit_patience', 'takeover_grace'));

insert into platform_settings (key, value) values
    ('takeover_grace', '30')            -- seconds after stale_run_after before another worker takes a run over
on conflict (key) do nothing;

comment on column sync_runs.deliveries is
    'How many times a worker claimed this run, and the generation of the current lease: every write of the '
    'holder checks it still holds this generation (issue 11); after max_deliveries the run fails (seed 003).';

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
