-- migrate:up
-- Worker liveness for the admin API (seed 003 "агент онлайн если виден < 5 мин"): Procrastinate's
-- procrastinate_workers table comes from the installed package (applied by the runner before our
-- migrations, decision 8), outside sqlc's catalog; this function is the typed, sqlc-visible view of it.
-- The body runs its query with EXECUTE so the function does not bind to the package's table at creation.
set lock_timeout = '5s';
set statement_timeout = '60s';

create function harvester_job_workers() returns table (id bigint, last_heartbeat timestamptz)
    language plpgsql
    stable
    set search_path to ''
as $$
begin
    return query execute 'select w.id, w.last_heartbeat from public.procrastinate_workers w order by w.id';
end;
$$;
comment on function harvester_job_workers() is
    'Procrastinate workers and their last heartbeat (online = younger than 5 minutes, computed by the reader).';

grant execute on function harvester_job_workers() to harvester_api, harvester_worker;

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
