-- Failure alerts (issue 10 §4): incidents, their detection and the send_alert job's bookkeeping.

-- name: OpenIncident :one
-- Opens an incident unless one of the same kind and subject is open; returns the new row's id only.
insert into alert_incidents (kind, subject, detail)
values (sqlc.arg(kind)::text, sqlc.arg(subject)::text, sqlc.narg(detail)::text)
on conflict (kind, subject) where resolved_at is null do nothing
returning id;

-- name: ResolveIncident :one
-- Closes an open incident; returns its id when it was open.
update alert_incidents set resolved_at = now()
where id = sqlc.arg(id)::bigint and resolved_at is null
returning id;

-- name: ListOpenIncidents :many
-- Every open incident (the tick resolves those whose condition cleared).
select id, kind, subject, detail, opened_at from alert_incidents where resolved_at is null order by id;

-- name: GetIncident :one
-- One incident for the notification text.
select id, kind, subject, detail, opened_at, resolved_at from alert_incidents where id = sqlc.arg(id)::bigint;

-- name: MarkIncidentSent :exec
-- A notification of the incident reached its channel.
update alert_incidents set last_sent_at = now() where id = sqlc.arg(id)::bigint;

-- name: CountIncidentSendFailure :exec
-- One failed delivery attempt (summed by the metric harvester_alert_delivery_failures_total).
update alert_incidents set send_failures = send_failures + 1 where id = sqlc.arg(id)::bigint;

-- name: SumAlertSendFailures :one
-- Failed alert delivery attempts over all incidents: the incidents with any, through
-- alert_incidents_send_failures_idx (decision 91), not every incident ever opened.
select coalesce(sum(send_failures), 0)::bigint as failures from alert_incidents where send_failures > 0;

-- name: DeferAlert :one
-- Queues a send_alert job in the caller's transaction (function harvester_defer_alert, migration 9).
select harvester_defer_alert(sqlc.arg(args)::jsonb)::bigint as job_id;

-- name: GetRunForAlert :one
-- A finished run with its source's name and connector, for the run-failed notification.
select r.id, r.source_id, r.state, r.mode, r.error_detail, s.name as source_name, s.connector_type
from sync_runs r join sources s on s.id = r.source_id
where r.id = sqlc.arg(id)::bigint;

-- name: ListAlertConditions :many
-- Every alert condition true now, one row per (kind, subject) with a one-line detail.
-- The latest runs are read per source, each the first row of an index in the same order
-- (sync_runs_terminal_idx; a source's reconciliations through sync_runs_reconciliation_idx), not by
-- sorting the whole run journal once a minute (decision 81).
with latest as (
    select s.id as source_id, r.state, r.error_detail, r.id
    from sources s
    cross join lateral (
        select r.state, r.error_detail, r.id from sync_runs r
        where r.source_id = s.id and r.state in ('succeeded', 'failed', 'cancelled')
        order by r.finished_at desc, r.id desc limit 1) r
), latest_reconciliation as (
    select s.id as source_id, r.error_detail, r.id
    from sources s
    cross join lateral (
        select r.error_detail, r.id from sync_runs r
        where r.source_id = s.id and r.mode = 'reconciliation' and r.state in ('succeeded', 'failed')
        order by r.finished_at desc, r.id desc limit 1) r
), dlq as (
    -- From dead_letter_totals (decision 85), not a count of the whole queue once a minute.
    select t.source_id, sum(t.items)::bigint as depth from dead_letter_totals t group by t.source_id
)
select 'run_failed'::text as kind, ('source:' || l.source_id)::text as subject,
       ('run ' || l.id || ' failed: ' || coalesce(l.error_detail, 'no reason recorded'))::text as detail
from latest l where l.state = 'failed'
union all
select 'source_health_error', 'source:' || h.source_id,
       ('the connection probe says ' || coalesce(h.last_probe_status, 'error'))::text
from source_health h
where h.health = 'error' and h.last_run_state is distinct from 'failed'
union all
select 'mass_delete_held', 'source:' || lr.source_id, lr.error_detail
from latest_reconciliation lr where lr.error_detail like 'mass-deletion guard:%'
union all
select 'dead_letters_over_threshold', 'source:' || d.source_id,
       (d.depth || ' dead letters, more than ' || sqlc.arg(dlq_threshold)::bigint)::text
from dlq d where d.depth > sqlc.arg(dlq_threshold)::bigint
union all
select 'worker_gone', 'worker:' || w.id,
       ('no heartbeat since ' || to_char(w.last_heartbeat at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC')::text
from harvester_job_workers() w
where w.last_heartbeat < sqlc.arg(now)::timestamptz - make_interval(secs => sqlc.arg(worker_silence)::integer);

-- name: ListSourceNames :many
-- Source names and connectors for notification text.
select id, name, connector_type from sources order by id;
