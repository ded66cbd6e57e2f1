-- Run journal: start, claim, heartbeat, checkpoint, finish, and the reads of its history. The one-active-run
-- rule is the partial unique index sync_runs_one_active_per_source, never a check in Python.

-- name: StartRun :one
-- Queues a run unless the source already has a queued or running one (then returns nothing).
insert into sync_runs (source_id, mode, trigger, scope, options)
values (sqlc.arg(source_id)::bigint, sqlc.arg(mode)::text, sqlc.arg(trigger)::text, sqlc.narg(scope)::jsonb,
        coalesce(sqlc.narg(options)::jsonb, '{}'::jsonb))
on conflict (source_id) where state in ('queued', 'running') do nothing
returning id;

-- name: GetActiveRun :one
-- The source's queued or running run, if any (the 409 answer names it).
select id from sync_runs where source_id = sqlc.arg(source_id)::bigint and state in ('queued', 'running');

-- name: GetRun :one
-- One run with its derived history type and duration (finished_at - started_at, an interval).
-- nullable: duration
select id, source_id, mode, trigger, state, scope, entities_done, entities_total, checkpoint, error_count,
       error_detail, started_at, finished_at, heartbeat_at, created_at, api_calls, rate_limited, deliveries,
       claimed_at, worker_id, options, run_type, duration::interval as duration
from sync_run_history where id = sqlc.arg(id)::bigint;

-- name: ClaimRun :one
-- A worker takes a queued run, or a running one whose heartbeat went stale (its worker died) at least
-- `grace` seconds ago. Every claim is a new lease generation: deliveries counts the claims (seed 003:
-- re-delivery is counted, counters are not doubled) and every later write of the holder names it.
update sync_runs
set state = 'running',
    started_at = coalesce(started_at, now()),
    heartbeat_at = clock_timestamp(),
    claimed_at = now(),
    deliveries = deliveries + 1,
    worker_id = sqlc.arg(worker_id)::text
where id = sqlc.arg(id)::bigint
  and (state = 'queued'
       or (state = 'running' and heartbeat_at < now() - make_interval(
               secs => sqlc.arg(stale_after)::integer + sqlc.arg(grace)::integer)))
returning id, source_id, mode, trigger, scope, checkpoint, entities_done, entities_total, error_count,
          api_calls, rate_limited, deliveries, options;

-- name: HoldRunLease :one
-- First statement of every unit of work of a run: locks the run row if this worker still holds this
-- generation of the lease; nothing when the run was taken over, cancelled or finished (the unit aborts).
-- The row lock makes a takeover wait for the unit in flight, and the unit see a takeover that committed.
select id from sync_runs
where id = sqlc.arg(id)::bigint and state = 'running'
  and deliveries = sqlc.arg(generation)::integer and worker_id = sqlc.arg(worker_id)::text
for no key update;

-- name: SaveProgress :execrows
-- Commits a page: checkpoint and counters, in the same transaction as the page's rows.
-- Matches nothing when the run was cancelled or claimed by another worker: the caller stops.
update sync_runs
set checkpoint = sqlc.narg(checkpoint)::jsonb,
    entities_done = sqlc.arg(entities_done)::integer,
    entities_total = sqlc.narg(entities_total)::integer,
    error_count = sqlc.arg(error_count)::integer,
    api_calls = sqlc.arg(api_calls)::integer,
    rate_limited = sqlc.arg(rate_limited)::integer,
    heartbeat_at = clock_timestamp()
where id = sqlc.arg(id)::bigint and state = 'running'
  and deliveries = sqlc.arg(generation)::integer and worker_id = sqlc.arg(worker_id)::text;

-- name: Heartbeat :execrows
-- Liveness of a lease, beaten by the holder's own thread and connection whatever its pages are doing.
-- Wall-clock time, not the transaction's: the beat must say "alive now". Nothing matched = lease lost.
update sync_runs set heartbeat_at = clock_timestamp()
where id = sqlc.arg(id)::bigint and state = 'running'
  and deliveries = sqlc.arg(generation)::integer and worker_id = sqlc.arg(worker_id)::text;

-- name: ReleaseRunLease :execrows
-- A holder that lost its database connection gives its lease up once the database is back: the run
-- stays running with its checkpoint and is claimable at once (no stale wait), by this worker or another;
-- the epoch, not -infinity, so every client can read the column.
update sync_runs set heartbeat_at = 'epoch'
where id = sqlc.arg(id)::bigint and state = 'running'
  and deliveries = sqlc.arg(generation)::integer and worker_id = sqlc.arg(worker_id)::text;

-- name: FinishRun :execrows
-- Terminal state with the final counters; only the worker that holds this generation can finish it.
update sync_runs
set state = sqlc.arg(state)::text,
    finished_at = now(),
    error_detail = sqlc.narg(error_detail)::text,
    entities_done = sqlc.arg(entities_done)::integer,
    entities_total = sqlc.narg(entities_total)::integer,
    error_count = sqlc.arg(error_count)::integer,
    api_calls = sqlc.arg(api_calls)::integer,
    rate_limited = sqlc.arg(rate_limited)::integer,
    heartbeat_at = clock_timestamp()
where id = sqlc.arg(id)::bigint and state = 'running'
  and deliveries = sqlc.arg(generation)::integer and worker_id = sqlc.arg(worker_id)::text;

-- name: FailRun :execrows
-- Ends a queued or running run as failed regardless of worker (give-up after N deliveries, lost source).
update sync_runs
set state = 'failed', finished_at = now(), error_detail = sqlc.arg(error_detail)::text
where id = sqlc.arg(id)::bigint and state in ('queued', 'running');

-- name: FailUnheldRun :execrows
-- Ends a queued run, or a running one no live worker holds (heartbeat stale past stale_after + grace), as
-- failed with a reason: its job was given up (a worker died under it too often). A held run is left alone.
update sync_runs
set state = 'failed', finished_at = now(), error_detail = sqlc.arg(error_detail)::text
where id = sqlc.arg(id)::bigint
  and (state = 'queued'
       or (state = 'running' and heartbeat_at < now() - make_interval(
               secs => sqlc.arg(stale_after)::integer + sqlc.arg(grace)::integer)));

-- name: CancelRun :one
-- Cancels a queued or running run; the worker notices at its next page and stops (seed 000).
update sync_runs
set state = 'cancelled', finished_at = now()
where id = sqlc.arg(id)::bigint and state in ('queued', 'running')
returning id;

-- name: ListStaleRuns :many
-- Running runs whose worker stopped beating (watchdog resumes or fails them).
select id, source_id, deliveries
from sync_runs
where state = 'running' and heartbeat_at < now() - make_interval(secs => sqlc.arg(stale_after)::integer)
order by id;

-- name: ListRunsPage :many
-- Run history, newest first: one keyset page (ids below the cursor's), of one source or all, filtered by
-- state, mode, derived type, trigger and creation time [started_from, started_to). Planned for each call's
-- values (decision 87): which index serves the page (a source's sync_runs_source_id_id_idx, decision 86,
-- or the primary key) depends on the filters given, which a generic plan does not know.
-- nullable: duration
-- results: binary
-- plan: custom
select id, source_id, mode, trigger, state, scope, entities_done, entities_total, error_count, error_detail,
       started_at, finished_at, heartbeat_at, created_at, api_calls, rate_limited, deliveries, run_type,
       duration::interval as duration
from sync_run_history
where (sqlc.narg(source_id)::bigint is null or source_id = sqlc.narg(source_id)::bigint)
  and (sqlc.narg(state)::text is null or state = sqlc.narg(state)::text)
  and (sqlc.narg(mode)::text is null or mode = sqlc.narg(mode)::text)
  and (sqlc.narg(run_type)::text is null or run_type = sqlc.narg(run_type)::text)
  and (sqlc.narg(trigger)::text is null or trigger = sqlc.narg(trigger)::text)
  and (sqlc.narg(started_from)::timestamptz is null or created_at >= sqlc.narg(started_from)::timestamptz)
  and (sqlc.narg(started_to)::timestamptz is null or created_at < sqlc.narg(started_to)::timestamptz)
  and (sqlc.narg(before_id)::bigint is null or id < sqlc.narg(before_id)::bigint)
order by id desc
limit sqlc.arg(lim)::integer;

-- name: ListRedeliveredRuns :many
-- Live runs claimed more than once (seed 003 "redelivered"), each with its derived history type.
select id, source_id, deliveries, claimed_at, worker_id, run_type
from sync_run_history where state in ('queued', 'running') and deliveries > 1 order by id;

-- name: ListRunsByIds :many
-- The runs of one "sync all" (or any id list), from which its status is computed, never stored.
-- nullable: duration
select id, source_id, mode, trigger, state, scope, entities_done, entities_total, error_count, error_detail,
       started_at, finished_at, heartbeat_at, created_at, api_calls, rate_limited, deliveries, run_type,
       duration::interval as duration
from sync_run_history
where id = any(sqlc.arg(ids)::bigint[])
order by id;

-- name: CountRunsByState :many
-- Metrics: runs per source and state. Finished runs come from sync_run_totals (decision 83), the
-- unfinished ones (at most one per source) from the journal through sync_runs_one_active_per_source.
select source_id, state, sum(runs)::bigint as runs
from (select t.source_id, t.state, t.runs from sync_run_totals t
      union all
      select r.source_id, r.state, 1::bigint from sync_runs r where r.state in ('queued', 'running')) as counted
group by source_id, state
having sum(runs) > 0
order by source_id, state;

-- name: ListRunProgress :many
-- Progress of the given runs with their source's name (N of M while `harvester demo` waits for them).
select r.id, s.name, r.state, coalesce(r.entities_done, 0) as done, r.entities_total, r.error_count, r.error_detail
from sync_runs r join sources s on s.id = r.source_id
where r.id = any(sqlc.arg(ids)::bigint[]) order by r.id;

-- name: ListRunDurationHistograms :many
-- The run-duration histogram by source, mode and final state, from sync_run_totals (decision 83): the
-- buckets that hold runs, each with its runs (not cumulative; bucket i counts durations above bound i-1
-- and at most bound i, one past the last bound the longer ones), the bounds, and the durations' sum.
select t.source_id, t.mode, t.state, sum(t.duration_sum)::float8 as duration_sum,
       array_agg(t.bucket order by t.bucket)::integer[] as buckets,
       array_agg(t.runs order by t.bucket)::bigint[] as bucket_runs,
       harvester_run_duration_bounds()::float8[] as bounds
from sync_run_totals t
where t.runs > 0
group by t.source_id, t.mode, t.state
order by t.source_id, t.mode, t.state;

-- name: ListOrphanedRuns :many
-- Queued runs older than the grace that no run_sync job will run (its job failed, was cancelled or is
-- gone, or its worker died before the claim); the tick fails them so the source is not blocked.
select r.id, r.source_id, coalesce(j.last_status, 'missing')::text as last_status
from sync_runs r
join harvester_queued_run_jobs() as j on j.run_id = r.id
where r.state = 'queued'
  and not j.live
  and r.created_at < now() - make_interval(secs => sqlc.arg(grace)::integer)
order by r.id;

-- name: AbandonRun :execrows
-- Fails a run whose job broke: queued, or running under one of the job's own process's executions
-- (worker_id is `<process>:<execution>`, app.pipeline.run.execution_id), never one another worker has
-- taken over.
update sync_runs
set state = 'failed', finished_at = now(), error_detail = sqlc.arg(error_detail)::text
where id = sqlc.arg(id)::bigint
  and (state = 'queued'
       or (state = 'running' and (worker_id = sqlc.arg(worker_id)::text
                                  or starts_with(worker_id, sqlc.arg(worker_id)::text || ':'))));

-- name: ListenRunChanges :exec
-- Subscribes the session to runs changes (triggers _900_notify_runs on sync_runs, run_completeness and
-- sources): the API's runs response cache.
listen harvester_runs;
