-- migrate:up
-- Failure alerts (seed 000: "a failed run raises a notification through the same channel as the
-- platform's other alerts"; issue 10 §4). Channels and the DLQ threshold are platform settings; each
-- incident is one row here, so one alert goes out per incident and one recovery when it clears.
set lock_timeout = '5s';
set statement_timeout = '60s';

create table alert_incidents (
    id            bigint generated always as identity,
    kind          text        not null,
    subject       text        not null,
    detail        text,
    opened_at     timestamptz not null default now(),
    resolved_at   timestamptz,
    last_sent_at  timestamptz,
    send_failures integer     not null default 0,
    constraint alert_incidents_pkey primary key (id),
    constraint alert_incidents_kind_check check (kind in (
        'run_failed', 'source_health_error', 'mass_delete_held', 'dead_letters_over_threshold', 'worker_gone')),
    constraint alert_incidents_send_failures_not_negative check (send_failures >= 0),
    constraint alert_incidents_resolved_after_opened check (resolved_at is null or resolved_at >= opened_at)
);
-- One open incident per (kind, subject): a condition that persists raises one alert, not one per tick.
create unique index alert_incidents_one_open on alert_incidents (kind, subject) where resolved_at is null;
comment on index alert_incidents_one_open is 'Lock: at most one open incident per (kind, subject). ON CONFLICT targets repeat its WHERE.';
create index alert_incidents_opened_at_idx on alert_incidents (opened_at desc);

comment on table alert_incidents is
    'Alert de-duplication (issue 10 §4): one row per incident; opening and resolving each send one notification.';
comment on column alert_incidents.kind is 'What went wrong: run_failed, source_health_error, mass_delete_held, dead_letters_over_threshold, worker_gone.';
comment on column alert_incidents.subject is 'What it happened to: source:<id> or worker:<id>.';
comment on column alert_incidents.detail is 'One line for the notification (a run''s error_detail, the DLQ depth); never a secret.';
comment on column alert_incidents.resolved_at is 'When the condition cleared (a recovery notification is sent); NULL while open.';
comment on column alert_incidents.last_sent_at is 'When a notification of this incident last reached every channel.';
comment on column alert_incidents.send_failures is 'Failed delivery attempts (metric harvester_alert_delivery_failures_total).';

grant insert, update on alert_incidents to harvester_api, harvester_worker;
grant usage, select on sequence alert_incidents_id_seq to harvester_api, harvester_worker;

-- New settings: alert channels (a JSON array) and the DLQ depth that raises an alert. A channel's HMAC
-- key is stored encrypted (secret_enc, the app's AES-GCM envelope), never in clear: the table still
-- holds no secret (its comment). URLs must be http(s).
-- The two CHECKs are replaced by wider ones (two new keys); the guarantee for the old keys stays the same.
-- squawk-ignore ban-drop-constraint
alter table platform_settings drop constraint platform_settings_key_known;
alter table platform_settings add constraint platform_settings_key_known check (key in (
    'sync_interval', 'reconcile_interval', 'reconcile_window', 'probe_interval', 'watchdog_silence',
    'timezone', 'mass_delete_share', 'incremental_lookback', 'max_deliveries', 'stale_run_after',
    'webhook_dedupe_ttl', 'search_include_drafts', 'alert_channels', 'alert_dlq_threshold')) not valid;

create function harvester_alert_channels_valid(channels jsonb) returns boolean
    language sql
    immutable
    set search_path to ''
as $$
    select jsonb_typeof(channels) = 'array'
       and jsonb_array_length(channels) <= 20
       and coalesce((
           select bool_and(
               jsonb_typeof(c) = 'object'
               and c ->> 'kind' in ('webhook', 'slack')
               and jsonb_typeof(c -> 'url') = 'string'
               and (c ->> 'url') ~ '^https?://[^\s/?#]+'
               and length(c ->> 'url') <= 2048
               and not (c ? 'secret')
               and (not (c ? 'secret_enc') or (c ->> 'secret_enc') like 'v1:%')
               and (not (c ? 'events') or jsonb_typeof(c -> 'events') = 'array'))
           from jsonb_array_elements(channels) as c), true)
$$;
comment on function harvester_alert_channels_valid(jsonb) is
    'CHECK helper: alert_channels is an array of {kind webhook|slack, url http(s), secret_enc?, events?}; no clear secret.';

-- squawk-ignore ban-drop-constraint
alter table platform_settings drop constraint platform_settings_value_valid;
alter table platform_settings add constraint platform_settings_value_valid check (case key
    when 'timezone' then jsonb_typeof(value) = 'string' and length(value #>> '{}') between 1 and 64
    when 'mass_delete_share' then jsonb_typeof(value) = 'number' and (value #>> '{}')::numeric > 0 and (value #>> '{}')::numeric <= 1
    when 'reconcile_window' then jsonb_typeof(value) = 'number' and (value #>> '{}')::numeric between 0 and 10079
        and (value #>> '{}')::numeric = trunc((value #>> '{}')::numeric)
    when 'search_include_drafts' then jsonb_typeof(value) = 'boolean'
    when 'alert_channels' then public.harvester_alert_channels_valid(value)
    else jsonb_typeof(value) = 'number' and (value #>> '{}')::numeric > 0
        and (value #>> '{}')::numeric = trunc((value #>> '{}')::numeric)
    end) not valid;
-- Both are validated by the next migration, in its own transaction (squawk constraint-missing-not-valid).

insert into platform_settings (key, value) values
    ('alert_channels', '[]'),        -- no channel until an operator adds one
    ('alert_dlq_threshold', '100');  -- a source with more than 100 dead letters raises an alert

-- Deferring the send_alert job in the caller's transaction, from any process (API, CLI, a worker's
-- sync job) through plain SQL: Procrastinate's defer function lives in the package's schema, outside
-- sqlc's catalog, so it is called with EXECUTE (like harvester_job_workers, migration 8).
create function harvester_defer_alert(args jsonb) returns bigint
    language plpgsql
    -- public, not '': Procrastinate's own functions name their tables unqualified and inherit this path.
    set search_path to public
as $$
declare
    job_id bigint;
begin
    execute 'select (public.procrastinate_defer_jobs_v1(array[row($1, $2, 0, null, null, $3, null)'
            '::public.procrastinate_job_to_defer_v1]))[1]'
        into job_id
        using 'alerts', 'harvester:send_alert', args;
    return job_id;
end;
$$;
comment on function harvester_defer_alert(jsonb) is 'Queues one harvester:send_alert job (queue alerts) in the caller''s transaction.';
grant execute on function harvester_defer_alert(jsonb) to harvester_api, harvester_worker;

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
