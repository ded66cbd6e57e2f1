-- Sources: connection config and schedule overrides (seed 000 §1).

-- name: CreateSource :one
-- Registers a source; credential and webhook secret arrive already encrypted.
insert into sources (name, connector_type, base_url, auth_account, auth_method, credential_enc, state,
                     scope_mode, scope_list, content_filters, sync_interval, reconcile_interval,
                     reconcile_window, authority_tier, webhook_enabled, webhook_secret_enc)
values (sqlc.arg(name)::text, sqlc.arg(connector_type)::text, sqlc.narg(base_url)::text,
        sqlc.arg(auth_account)::text, sqlc.arg(auth_method)::text, sqlc.narg(credential_enc)::text,
        sqlc.arg(state)::text, sqlc.arg(scope_mode)::text, sqlc.arg(scope_list)::jsonb,
        sqlc.arg(content_filters)::jsonb, sqlc.narg(sync_interval)::integer,
        sqlc.narg(reconcile_interval)::integer, sqlc.narg(reconcile_window)::integer,
        sqlc.narg(authority_tier)::text, sqlc.arg(webhook_enabled)::boolean, sqlc.narg(webhook_secret_enc)::text)
returning id;

-- name: GetSource :one
-- One source with everything the worker needs (ciphertexts included; never sent to a client).
select id, name, connector_type, base_url, auth_account, auth_method, credential_enc, state, scope_mode,
       scope_list, content_filters, sync_interval, reconcile_interval, reconcile_window, authority_tier,
       webhook_enabled, webhook_secret_enc, incremental_cursor, last_probe_at, last_probe_status,
       created_at, updated_at
from sources where id = sqlc.arg(id)::bigint;

-- name: GetSourceIdByName :one
-- Resolves a source name (CLI accepts names or ids).
select id from sources where name = sqlc.arg(name)::text;

-- name: SetIncrementalCursor :exec
-- Advances the cursor; called only in the transaction that marks a run succeeded (seed 001).
update sources set incremental_cursor = sqlc.arg(cursor)::jsonb where id = sqlc.arg(id)::bigint;

-- name: SetProbeResult :exec
-- Records the scheduled probe's outcome (the one stored facet of health).
update sources set last_probe_at = now(), last_probe_status = sqlc.arg(status)::text
where id = sqlc.arg(id)::bigint;

-- name: SetSourceSecrets :exec
-- Stores encrypted secrets (bound to the source id, so the row must exist first).
update sources
set credential_enc = sqlc.narg(credential_enc)::text, webhook_secret_enc = sqlc.narg(webhook_secret_enc)::text
where id = sqlc.arg(id)::bigint;

-- name: ListSourcesOverview :many
-- Hub screen: every source with its computed health, live entity count, DLQ depth and last run.
select s.id, s.name, s.connector_type, s.state, h.health, h.last_run_id, h.last_run_state,
       h.last_run_finished_at,
       (select count(*) from live_entities e where e.source_id = s.id) as entity_count,
       (select count(*) from dead_letters d where d.source_id = s.id) as dlq_depth
from sources s join source_health h on h.source_id = s.id
order by s.id;

-- name: ListScheduleState :many
-- Per active source: overrides and the history the schedule tick needs (last runs, last probe, cursor).
select s.id, s.connector_type, s.sync_interval, s.reconcile_interval, s.reconcile_window, s.webhook_enabled,
       s.last_probe_at, s.incremental_cursor,
       (select max(r.created_at) from sync_runs r where r.source_id = s.id and r.mode = 'incremental')::timestamptz
           as last_incremental,
       (select max(r.created_at) from sync_runs r where r.source_id = s.id and r.mode = 'reconciliation')::timestamptz
           as last_reconciliation,
       (select max(r.finished_at) from sync_runs r where r.source_id = s.id and r.state = 'succeeded')::timestamptz
           as last_success,
       (select max(r.created_at) from sync_runs r where r.source_id = s.id and r.trigger = 'watchdog')::timestamptz
           as last_watchdog
from sources s
where s.state = 'active'
order by s.id;
