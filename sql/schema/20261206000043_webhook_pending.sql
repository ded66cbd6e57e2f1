-- migrate:up
-- Webhook deliveries coalesce per source (decision 145). Until now each accepted delivery deferred a job that
-- started one items-scoped run; while the source had a run, the job retried every 10 s, and of a burst of N
-- deliveries only one got in each time: N runs, one after another, each 10 s after the last. Now a delivery
-- adds its items to the source's pending set and defers a job only when none is waiting for the source; the
-- job takes the whole set into one run. A burst during a long run becomes one run after it.
--
-- Logged, unlike webhook_deliveries: the dedupe window may be forgotten on a crash, a change the source
-- announced may not (the delivery was answered 202).
set lock_timeout = '5s';
set statement_timeout = '60s';

create table webhook_pending (
    source_id        bigint      not null,
    source_type      text        not null,
    source_entity_id text        not null,
    received_at      timestamptz not null default now(),
    constraint webhook_pending_pkey primary key (source_id, source_type, source_entity_id),
    constraint webhook_pending_source_id_fkey foreign key (source_id) references sources (id) on delete cascade,
    constraint webhook_pending_source_type_nonempty check (source_type <> ''),
    constraint webhook_pending_source_entity_id_nonempty check (source_entity_id <> '')
);
comment on table webhook_pending is
    'Items announced by accepted webhook deliveries and not yet in a run: one row per item, however many deliveries named it. apply_webhook takes them into one items-scoped run (decision 145).';
comment on column webhook_pending.received_at is
    'When the first delivery still pending named the item: the oldest are taken first when a run takes a bounded share.';

-- The API adds items as it accepts deliveries; the worker takes them (and adds those of jobs deferred before
-- this migration, which carried their items as arguments).
grant insert on webhook_pending to harvester_api;
grant insert, delete on webhook_pending to harvester_worker;

-- Procrastinate's jobs table comes from the installed package, outside sqlc's catalog (as in
-- harvester_queued_run_jobs): this function is the typed view of "a job will take this source's pending
-- items". Only a todo job counts: one being done may have taken the set already, and a retried one is todo
-- again until its next attempt. The partial index procrastinate keeps on todo jobs serves the filter.
create function harvester_webhook_job_waiting(p_source_id bigint)
    returns boolean
    language plpgsql
    stable
    set search_path to ''
as $$
declare
    waiting boolean;
begin
    execute $q$
        select exists (
            select 1 from public.procrastinate_jobs j
             where j.status = 'todo'
               and j.task_name = 'harvester:apply_webhook'
               and j.args ? 'source_id'
               and (j.args ->> 'source_id')::bigint = $1)
    $q$ into waiting using p_source_id;
    return waiting;
end;
$$;
comment on function harvester_webhook_job_waiting(bigint) is
    'Whether a todo apply_webhook job for the source exists: it will take whatever the source has pending.';

grant execute on function harvester_webhook_job_waiting(bigint) to harvester_api, harvester_worker;

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
