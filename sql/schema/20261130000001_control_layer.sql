-- migrate:up
-- Control layer of Harvester: connected sources, the run journal and the dead-letter queue.
-- Columns, NULL-ability, defaults and CHECK sets follow seed 000 ("Источник, прогоны, сбойные items").
set lock_timeout = '5s';
set statement_timeout = '60s';

-- Created by the runner before the first migration too; declared here so sqlc's catalog knows it.
-- dbmate reads only version; checksum lets the runner refuse an edited, already-applied file.
create table if not exists schema_migrations (
    version    text        not null,
    checksum   text,
    applied_at timestamptz not null default now(),
    constraint schema_migrations_pkey primary key (version)
);
comment on table schema_migrations is 'Applied migrations (dbmate-compatible) with the checksum of each file''s up section.';

create table sources (
    id                 bigint generated always as identity,
    name               text        not null,
    connector_type     text        not null,
    base_url           text,
    auth_account       text        not null default 'service',
    auth_method        text        not null default 'static_token',
    credential_enc     text,
    state              text        not null default 'active',
    scope_mode         text        not null default 'all',
    scope_list         jsonb       not null default '[]'::jsonb,
    content_filters    jsonb       not null default '{}'::jsonb,
    sync_interval      integer,
    reconcile_interval integer,
    reconcile_window   integer,
    authority_tier     text,
    webhook_enabled    boolean     not null default false,
    webhook_secret_enc text,
    incremental_cursor jsonb,
    last_probe_at      timestamptz,
    last_probe_status  text,
    created_at         timestamptz not null default now(),
    updated_at         timestamptz not null default now(),
    constraint sources_pkey primary key (id),
    constraint sources_name_key unique (name),
    constraint sources_auth_account_check check (auth_account in ('service', 'personal')),
    constraint sources_auth_method_check check (auth_method in ('static_token', 'oauth')),
    constraint sources_state_check check (state in ('active', 'paused', 'disconnected')),
    constraint sources_scope_mode_check check (scope_mode in ('all', 'selected')),
    constraint sources_scope_list_is_array check (jsonb_typeof(scope_list) = 'array'),
    constraint sources_content_filters_is_object check (jsonb_typeof(content_filters) = 'object'),
    constraint sources_sync_interval_positive check (sync_interval > 0),
    constraint sources_reconcile_interval_positive check (reconcile_interval > 0),
    constraint sources_reconcile_window_range check (reconcile_window between 0 and 10079),
    constraint sources_authority_tier_check check (authority_tier in ('low', 'normal', 'high')),
    constraint sources_last_probe_status_check check (last_probe_status in ('ok', 'unreachable', 'auth_failed')),
    -- Seed 000: a disconnected source holds no credential.
    constraint sources_disconnected_has_no_credential check (state <> 'disconnected' or credential_enc is null)
);

comment on table sources is
    'Connected sources (seed 000 §1). state is the admin''s intent; health is derived (view source_health), never stored.';
comment on column sources.connector_type is 'Connector key; open set without CHECK, resolved against the connector manifest.';
comment on column sources.credential_enc is 'AES-256-GCM ciphertext "v1:<key id>:<b64 nonce|ct>"; NULL when disconnected. Never returned by the API.';
comment on column sources.webhook_secret_enc is 'AES-256-GCM ciphertext of the webhook HMAC secret; same envelope as credential_enc.';
comment on column sources.scope_list is 'Container ids: deny-list when scope_mode = all, allow-list when selected (kinds declared by the manifest).';
comment on column sources.content_filters is 'Toggles "beyond the rules"; the key set is declared by the connector manifest.';
comment on column sources.sync_interval is 'Seconds between incremental runs; NULL inherits platform_settings.sync_interval (seed 001 "Расписание").';
comment on column sources.reconcile_interval is 'Seconds between reconciliations; NULL inherits platform_settings.reconcile_interval.';
comment on column sources.reconcile_window is 'Minute of week (0 = Monday 00:00, org time zone) when reconciliation starts; NULL inherits.';
comment on column sources.authority_tier is 'Trust tier for Knowledge Store decay; NULL = the manifest''s default_authority.';
comment on column sources.incremental_cursor is 'Position "since" of the last succeeded run: {"updated": <UTC ISO>, "ids": [...]}; NULL before the first.';
comment on column sources.last_probe_status is 'Result of the scheduled connection probe: the one health facet a run cannot give (seed 000).';

create table sync_runs (
    id             bigint generated always as identity,
    source_id      bigint      not null,
    mode           text        not null,
    trigger        text        not null,
    state          text        not null default 'queued',
    scope          jsonb,
    entities_done  integer,
    entities_total integer,
    checkpoint     jsonb,
    error_count    integer     not null default 0,
    error_detail   text,
    started_at     timestamptz,
    finished_at    timestamptz,
    heartbeat_at   timestamptz,
    created_at     timestamptz not null default now(),
    -- Harvester additions (brief §4, seed 003 "Журнал синхронизаций"): request counters and deliveries.
    api_calls      integer     not null default 0,
    rate_limited   integer     not null default 0,
    deliveries     integer     not null default 0,
    claimed_at     timestamptz,
    worker_id      text,
    options        jsonb       not null default '{}'::jsonb,
    constraint sync_runs_pkey primary key (id),
    constraint sync_runs_source_id_fkey foreign key (source_id) references sources (id) on delete cascade,
    constraint sync_runs_mode_check check (mode in ('full', 'incremental', 'reconciliation')),
    constraint sync_runs_trigger_check check (trigger in ('connect', 'schedule', 'webhook', 'watchdog', 'manual')),
    constraint sync_runs_state_check check (state in ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    constraint sync_runs_counters_not_negative check (
        error_count >= 0 and api_calls >= 0 and rate_limited >= 0 and deliveries >= 0
        and coalesce(entities_done, 0) >= 0 and coalesce(entities_total, 0) >= 0),
    -- A terminal run has its terminal time; a live one has none (seed 003: give-up sets finished_at).
    constraint sync_runs_finished_iff_terminal check (
        (state in ('succeeded', 'failed', 'cancelled')) = (finished_at is not null))
);

create index sync_runs_source_id_created_at_idx on sync_runs (source_id, created_at desc);
-- Seed 000 "Один активный прогон на источник": at most one queued or running run per source.
create unique index sync_runs_one_active_per_source on sync_runs (source_id) where state in ('queued', 'running');
comment on index sync_runs_one_active_per_source is 'Lock: one queued/running run per source (seed 000). ON CONFLICT targets repeat its WHERE.';

comment on table sync_runs is
    'Run journal (seed 000 §2). The history "type" is derived from mode + trigger + scope (view sync_run_history).';
comment on column sync_runs.scope is
    'NULL = whole source; {"kind":"window","since":...}; {"kind":"items","items":[{"source_type":..,"source_entity_id":..}]} (DLQ retry); {"kind":"containers","containers":[...]}.';
comment on column sync_runs.entities_done is 'N of "N of M": items processed; set from the checkpoint, so redelivery never doubles it.';
comment on column sync_runs.entities_total is 'M of "N of M": the connector''s estimate.';
comment on column sync_runs.checkpoint is 'Connector position after the last committed page; a resumed run continues from here.';
comment on column sync_runs.error_count is 'Items sent to the DLQ by this run: an immutable snapshot, unlike the live DLQ depth.';
comment on column sync_runs.api_calls is 'HTTP requests made to the source by this run (seed 003 jira_calls).';
comment on column sync_runs.rate_limited is 'Responses 429/503 received by this run (seed 003 rate_limited).';
comment on column sync_runs.deliveries is 'How many times a worker claimed this run; after the limit the run fails with finished_at (seed 003).';
comment on column sync_runs.options is 'Run flags, e.g. {"confirm_mass_delete": true} to let a reconciliation pass the mass-deletion guard.';

create table dead_letters (
    id               bigint generated always as identity,
    source_id        bigint      not null,
    run_id           bigint,
    source_type      text        not null,
    source_entity_id text        not null,
    reason           text        not null,
    error_detail     text,
    attempts         integer     not null default 1,
    created_at       timestamptz not null default now(),
    updated_at       timestamptz not null default now(),
    constraint dead_letters_pkey primary key (id),
    constraint dead_letters_source_id_fkey foreign key (source_id) references sources (id) on delete cascade,
    constraint dead_letters_run_id_fkey foreign key (run_id) references sync_runs (id) on delete set null,
    constraint dead_letters_reason_check check (reason in ('permission', 'not_found', 'malformed', 'rate_limited', 'unknown')),
    constraint dead_letters_attempts_positive check (attempts >= 1),
    -- Seed 000 "Одна строка на сбойный item": a re-failing item updates its row instead of adding one.
    constraint dead_letters_item_key unique (source_id, source_type, source_entity_id)
);
create index dead_letters_run_id_idx on dead_letters (run_id);

comment on table dead_letters is
    'Working queue of unresolved failed items (seed 000 §3): a row leaves when the item loads or is gone at the source.';
comment on column dead_letters.run_id is 'Run of the latest failure; SET NULL so the queue outlives journal clean-up.';
comment on column dead_letters.attempts is 'How many times the item failed; +1 on every repeat via upsert.';

create table platform_settings (
    key        text        not null,
    value      jsonb       not null,
    updated_at timestamptz not null default now(),
    constraint platform_settings_pkey primary key (key),
    constraint platform_settings_key_known check (key in (
        'sync_interval', 'reconcile_interval', 'reconcile_window', 'probe_interval', 'watchdog_silence',
        'timezone', 'mass_delete_share', 'incremental_lookback', 'max_deliveries', 'stale_run_after',
        'webhook_dedupe_ttl', 'search_include_drafts')),
    -- Typed values, so a DBA's UPDATE cannot store what the API would refuse (seed 003 "Настройки").
    constraint platform_settings_value_valid check (case key
        when 'timezone' then jsonb_typeof(value) = 'string' and length(value #>> '{}') between 1 and 64
        when 'mass_delete_share' then jsonb_typeof(value) = 'number' and (value #>> '{}')::numeric > 0 and (value #>> '{}')::numeric <= 1
        when 'reconcile_window' then jsonb_typeof(value) = 'number' and (value #>> '{}')::numeric between 0 and 10079
            and (value #>> '{}')::numeric = trunc((value #>> '{}')::numeric)
        when 'search_include_drafts' then jsonb_typeof(value) = 'boolean'
        else jsonb_typeof(value) = 'number' and (value #>> '{}')::numeric > 0
            and (value #>> '{}')::numeric = trunc((value #>> '{}')::numeric)
        end)
);
comment on table platform_settings is
    'Platform defaults as key -> JSON (seed 001 "Расписание", seed 003 "Настройки"); no secret is ever stored here.';

create table platform_settings_version (
    singleton boolean not null default true,
    version   bigint  not null default 1,
    constraint platform_settings_version_pkey primary key (singleton),
    constraint platform_settings_version_singleton check (singleton)
);
comment on table platform_settings_version is 'One row: the settings version, raised by a trigger on every changed value.';

insert into platform_settings_version (singleton, version) values (true, 1);
insert into platform_settings (key, value) values
    ('sync_interval', '900'),           -- incremental every 15 min
    ('reconcile_interval', '604800'),   -- reconciliation weekly
    ('reconcile_window', '8820'),       -- Sunday 03:00: 6 * 1440 + 180 minutes after Monday 00:00
    ('probe_interval', '86400'),        -- health probe daily
    ('watchdog_silence', '43200'),      -- 12 h of webhook silence triggers the watchdog
    ('timezone', '"UTC"'),              -- organisation time zone (IANA name)
    ('mass_delete_share', '0.2'),       -- a reconciliation deleting more than 20 % waits for confirmation
    ('incremental_lookback', '120'),    -- seconds of overlap before the cursor
    ('max_deliveries', '3'),            -- a run claimed this many times without finishing fails
    ('stale_run_after', '120'),         -- seconds without heartbeat before a running run is resumed elsewhere
    ('webhook_dedupe_ttl', '86400'),    -- seconds a webhook delivery id is remembered
    ('search_include_drafts', 'false'); -- draft content hidden from search by default

create table api_tokens (
    id           bigint generated always as identity,
    name         text        not null,
    scope        text        not null,
    token_hash   text        not null,
    created_at   timestamptz not null default now(),
    last_used_at timestamptz,
    revoked_at   timestamptz,
    constraint api_tokens_pkey primary key (id),
    constraint api_tokens_scope_check check (scope in ('admin', 'read')),
    constraint api_tokens_token_hash_key unique (token_hash)
);
comment on table api_tokens is 'Admin API bearer tokens; only a SHA-256 of the token is stored, the token is printed once.';

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
