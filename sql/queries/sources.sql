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

-- name: ListSourceIds :many
-- Every source id, ordered.
select id from sources order by id;

-- name: ListSchedulableSources :many
-- Active sources with their schedule overrides, for the schedule tick (paused/disconnected never run).
select id, connector_type, sync_interval, reconcile_interval, reconcile_window, webhook_enabled
from sources where state = 'active' order by id;

-- name: SetIncrementalCursor :exec
-- Advances the cursor; called only in the transaction that marks a run succeeded (seed 001).
update sources set incremental_cursor = sqlc.arg(cursor)::jsonb where id = sqlc.arg(id)::bigint;

-- name: SetProbeResult :exec
-- Records the scheduled probe's outcome (the one stored facet of health).
update sources set last_probe_at = now(), last_probe_status = sqlc.arg(status)::text
where id = sqlc.arg(id)::bigint;
