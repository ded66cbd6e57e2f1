-- migrate:up
-- GET /metrics is scraped every 15 to 60 seconds. It read the whole run journal on every scrape: the
-- run-duration histogram took every finished run's duration, the per-source counters summed every
-- run, and the runs gauge counted them. sync_runs is never pruned (a source polled every 15 minutes
-- adds 35,000 runs a year), so each scrape grew with the installation's age (decision 83).
-- sync_run_totals holds the same figures for the finished runs, per source, mode, final state and
-- duration bucket; the trigger file sql/triggers/600_run_totals.sql keeps it exact (statement triggers
-- on every insert, update, delete or truncate of sync_runs) and rebuilds it from the journal when it is
-- applied. Unfinished runs (at most one per source) are added at read time.
set lock_timeout = '5s';
set statement_timeout = '60s';

create function harvester_run_duration_bounds() returns float8[]
    language sql
    immutable
    parallel safe
as $$
    select array[1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600]::float8[]
$$;
comment on function harvester_run_duration_bounds() is
    'Upper bounds (seconds, inclusive) of the run-duration histogram''s buckets (Prometheus "le"); a last bucket holds longer runs.';

create function harvester_run_duration_bucket(seconds float8) returns integer
    language sql
    immutable
    parallel safe
as $$
    select (1 + count(*))::integer from unnest(public.harvester_run_duration_bounds()) as b(bound) where b.bound < seconds
$$;
comment on function harvester_run_duration_bucket(float8) is
    'The histogram bucket of a duration: i when it is above bound i-1 and at most bound i of harvester_run_duration_bounds(), one past the last bound when longer.';

create table sync_run_totals (
    source_id     bigint   not null,
    mode          text     not null,
    state         text     not null,
    bucket        integer  not null,
    runs          bigint   not null,
    webhook_runs  bigint   not null,
    entities_done bigint   not null,
    api_calls     bigint   not null,
    rate_limited  bigint   not null,
    duration_sum  numeric  not null,
    constraint sync_run_totals_pkey primary key (source_id, mode, state, bucket),
    constraint sync_run_totals_source_id_fkey foreign key (source_id) references sources (id) on delete cascade,
    constraint sync_run_totals_mode_check check (mode in ('full', 'incremental', 'reconciliation')),
    constraint sync_run_totals_state_check check (state in ('succeeded', 'failed', 'cancelled')),
    constraint sync_run_totals_bucket_range check (bucket between 1 and cardinality(harvester_run_duration_bounds()) + 1),
    constraint sync_run_totals_counts_not_negative check (
        runs >= 0 and webhook_runs >= 0 and entities_done >= 0 and api_calls >= 0 and rate_limited >= 0
        and duration_sum >= 0)
);
comment on table sync_run_totals is
    'Finished runs summed per source, mode, final state and duration bucket (GET /metrics), kept exact by statement triggers on sync_runs (sql/triggers/600_run_totals.sql).';
comment on column sync_run_totals.bucket is
    'The runs'' duration bucket (harvester_run_duration_bucket of finished_at - coalesce(started_at, created_at), negative taken as 0).';
comment on column sync_run_totals.duration_sum is
    'Sum of the runs'' durations in seconds; numeric, so that a run taken out subtracts exactly what it added.';

-- The triggers write as the role that changed the runs: both roles write sync_runs.
grant insert, update, delete on sync_run_totals to harvester_api, harvester_worker;

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
