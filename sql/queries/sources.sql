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

-- name: ListScheduleState :many
-- Per active source: overrides and the history the schedule tick needs. The polling clock counts
-- whole-source polls only (never webhook or items-scoped runs); a reconciliation counts as done only
-- when it succeeded or is still active; the first full sync anchors the first reconciliation window.
-- Each look-up is the first row of an index in its order (`order by … limit 1`): the last poll walks
-- sync_runs_source_id_created_at_idx back to the newest poll, the first full sync reads
-- sync_runs_anchor_idx, the reconciliations sync_runs_reconciliation_idx, the last success
-- sync_runs_succeeded_idx, the last watchdog run sync_runs_watchdog_idx. None reads a source's whole
-- history (decision 81), nor a failing source's failures (decision 89).
select s.id, s.connector_type, s.sync_interval, s.reconcile_interval, s.reconcile_window, s.webhook_enabled,
       s.last_probe_at, s.incremental_cursor, s.created_at,
       (select r.created_at from sync_runs r
        where r.source_id = s.id and r.mode in ('incremental', 'full') and r.trigger <> 'webhook'
          and r.scope is null
        order by r.created_at desc limit 1)::timestamptz as last_poll,
       (select r.created_at from sync_runs r
        where r.source_id = s.id and r.mode in ('full', 'reconciliation') and r.scope is null
          and r.state in ('queued', 'running', 'succeeded')
        order by r.created_at limit 1)::timestamptz as first_full,
       (select r.created_at from sync_runs r
        where r.source_id = s.id and r.mode = 'reconciliation'
          and r.state in ('queued', 'running', 'succeeded')
        order by r.created_at desc limit 1)::timestamptz as last_reconciliation,
       (select r.created_at from sync_runs r
        where r.source_id = s.id and r.mode = 'reconciliation' and r.trigger = 'schedule'
        order by r.created_at desc limit 1)::timestamptz as last_reconciliation_attempt,
       (select r.finished_at from sync_runs r
        where r.source_id = s.id and r.state = 'succeeded' and r.finished_at is not null
        order by r.finished_at desc limit 1)::timestamptz as last_success,
       (select r.created_at from sync_runs r
        where r.source_id = s.id and r.trigger = 'watchdog'
        order by r.created_at desc limit 1)::timestamptz as last_watchdog
from sources s
where s.state = 'active'
order by s.id;

-- name: ListSourceDetails :many
-- Every column of seed 000's sources (ciphertexts included, masked before leaving the process) with the
-- computed health, live entity count, DLQ depth and last run; one source when id is given. The live
-- entity count is source_entity_totals' (kept by triggers on entities, decision 84) and the DLQ depth
-- dead_letter_totals' (decision 85), not counts per call.
select s.id, s.name, s.connector_type, s.base_url, s.auth_account, s.auth_method, s.credential_enc, s.state,
       s.scope_mode, s.scope_list, s.content_filters, s.sync_interval, s.reconcile_interval, s.reconcile_window,
       s.authority_tier, s.webhook_enabled, s.webhook_secret_enc, s.incremental_cursor, s.last_probe_at,
       s.last_probe_status, s.created_at, s.updated_at,
       h.health, h.last_run_id, h.last_run_state, h.last_run_finished_at, h.last_run_error_count,
       coalesce((select t.live from source_entity_totals t where t.source_id = s.id), 0)::bigint as entity_count,
       coalesce((select sum(t.items) from dead_letter_totals t where t.source_id = s.id), 0)::bigint as dlq_depth
from sources s join source_health h on h.source_id = s.id
where sqlc.narg(id)::bigint is null or s.id = sqlc.narg(id)::bigint
order by s.id;

-- name: ListSourcesPage :many
-- GET /sources: one keyset page (id ascending, after the cursor's id), optionally of one state or
-- connector type, with the same computed columns as ListSourceDetails.
select s.id, s.name, s.connector_type, s.base_url, s.auth_account, s.auth_method, s.credential_enc, s.state,
       s.scope_mode, s.scope_list, s.content_filters, s.sync_interval, s.reconcile_interval, s.reconcile_window,
       s.authority_tier, s.webhook_enabled, s.webhook_secret_enc, s.incremental_cursor, s.last_probe_at,
       s.last_probe_status, s.created_at, s.updated_at,
       h.health, h.last_run_id, h.last_run_state, h.last_run_finished_at, h.last_run_error_count,
       coalesce((select t.live from source_entity_totals t where t.source_id = s.id), 0)::bigint as entity_count,
       coalesce((select sum(t.items) from dead_letter_totals t where t.source_id = s.id), 0)::bigint as dlq_depth
from sources s join source_health h on h.source_id = s.id
where (sqlc.narg(after_id)::bigint is null or s.id > sqlc.narg(after_id)::bigint)
  and (sqlc.narg(state)::text is null or s.state = sqlc.narg(state)::text)
  and (sqlc.narg(connector_type)::text is null or s.connector_type = sqlc.narg(connector_type)::text)
order by s.id
limit sqlc.arg(lim)::integer;

-- name: LockSource :one
-- The row a PATCH rewrites, locked so two concurrent edits cannot lose one another.
select id, name, connector_type, base_url, auth_account, auth_method, credential_enc, state, scope_mode,
       scope_list, content_filters, sync_interval, reconcile_interval, reconcile_window, authority_tier,
       webhook_enabled, webhook_secret_enc
from sources where id = sqlc.arg(id)::bigint
for update;

-- name: UpdateSource :execrows
-- Writes every settable column of a source (the merged PATCH); secrets arrive already encrypted.
update sources
set name = sqlc.arg(name)::text,
    base_url = sqlc.narg(base_url)::text,
    auth_account = sqlc.arg(auth_account)::text,
    auth_method = sqlc.arg(auth_method)::text,
    credential_enc = sqlc.narg(credential_enc)::text,
    state = sqlc.arg(state)::text,
    scope_mode = sqlc.arg(scope_mode)::text,
    scope_list = sqlc.arg(scope_list)::jsonb,
    content_filters = sqlc.arg(content_filters)::jsonb,
    sync_interval = sqlc.narg(sync_interval)::integer,
    reconcile_interval = sqlc.narg(reconcile_interval)::integer,
    reconcile_window = sqlc.narg(reconcile_window)::integer,
    authority_tier = sqlc.narg(authority_tier)::text,
    webhook_enabled = sqlc.arg(webhook_enabled)::boolean,
    webhook_secret_enc = sqlc.narg(webhook_secret_enc)::text
where id = sqlc.arg(id)::bigint;

-- name: DeleteSource :execrows
-- Removes a source; its runs, dead letters and notes go with it (foreign keys cascade).
delete from sources where id = sqlc.arg(id)::bigint;

-- name: ListActiveSourceIds :many
-- Sources "sync all" starts a run for (paused and disconnected ones are left alone).
select id from sources where state = 'active' order by id;

-- name: SummarizeSourcesForMetrics :many
-- Metrics per source: items processed, API calls and rate-limited responses over all runs, seconds since
-- the last successful run (NULL before the first), webhook-triggered runs and remembered deliveries.
-- nullable: seconds_since_success
-- Finished runs are summed in sync_run_totals (decision 83); the unfinished one, if any, is read through
-- sync_runs_one_active_per_source, the last success through sync_runs_succeeded_idx (decision 89), the
-- remembered deliveries from webhook_delivery_totals (its slots summed, decision 90). Nothing here reads
-- the whole journal, a failing source's failures, or the dedupe window.
select s.id as source_id,
       (coalesce(t.entities_done, 0) + coalesce(a.entities_done, 0))::bigint as items_processed,
       (coalesce(t.api_calls, 0) + coalesce(a.api_calls, 0))::bigint as api_calls,
       (coalesce(t.rate_limited, 0) + coalesce(a.rate_limited, 0))::bigint as rate_limited,
       (select extract(epoch from now() - max(r.finished_at)) from sync_runs r
         where r.source_id = s.id and r.state = 'succeeded')::float8 as seconds_since_success,
       (coalesce(t.webhook_runs, 0) + coalesce(a.webhook_runs, 0))::bigint as webhook_runs,
       coalesce((select sum(w.deliveries) from webhook_delivery_totals w where w.source_id = s.id), 0)::bigint
           as webhook_deliveries
from sources s
left join lateral (
    select sum(x.entities_done) as entities_done, sum(x.api_calls) as api_calls, sum(x.rate_limited) as rate_limited,
           sum(x.webhook_runs) as webhook_runs
    from sync_run_totals x where x.source_id = s.id) as t on true
left join lateral (
    select sum(r.entities_done) as entities_done, sum(r.api_calls) as api_calls, sum(r.rate_limited) as rate_limited,
           count(*) filter (where r.trigger = 'webhook') as webhook_runs
    from sync_runs r where r.source_id = s.id and r.state in ('queued', 'running')) as a on true
order by s.id;

-- name: ListSourceLastSuccess :many
-- Every source with its name, connector and the end of its last succeeded run (NULL: never succeeded),
-- the first entry of sync_runs_succeeded_idx (decision 89).
select s.id, s.name, s.connector_type,
       (select max(r.finished_at) from sync_runs r where r.source_id = s.id and r.state = 'succeeded')::timestamptz as last_success
from sources s order by s.id;
