-- Re-appliable: applied after the migrations on every `harvester db migrate` that changes the schema or
-- this file. sync_run_totals (migration 29) sums the finished runs per source, mode, final state and
-- duration bucket, so that GET /metrics reads a few rows per source instead of the whole run journal
-- (decision 83). These triggers keep it exact: a run counts from the moment it is inserted or updated
-- into a final state, and stops counting when it is deleted, truncated or changed (each change takes
-- the old row out and puts the new one in).
-- Statement triggers with transition tables, not row triggers: a statement that finishes, edits or
-- deletes many runs (a source's deletion cascades to all its runs) sums its rows first and writes each
-- totals row once. Row triggers wrote the same few rows once per run, and within one transaction every
-- such update lengthens the row's version chain: a bulk insert of a million runs ran past seven minutes.
-- Each application rebuilds the table from the journal under a lock that holds run writes meanwhile,
-- so the totals cannot drift from the journal.

-- The triggers and the rebuild lock sync_runs; a migrate waits at most this long for the runs being
-- written, then fails and rolls back (run it again). For the rest of the trigger files' transaction.
set local lock_timeout = '30s';
set local statement_timeout = '15min';

create or replace function harvester_run_totals_merge(deltas public.sync_run_totals[]) returns void
    language plpgsql
    set search_path to ''
as $$
begin
    -- Keys that gained runs: added, or created (a key without a row had no finished run before).
    insert into public.sync_run_totals as t
    select d.* from unnest(deltas) as d where d.runs > 0
    on conflict on constraint sync_run_totals_pkey do update
    set runs = t.runs + excluded.runs,
        webhook_runs = t.webhook_runs + excluded.webhook_runs,
        entities_done = t.entities_done + excluded.entities_done,
        api_calls = t.api_calls + excluded.api_calls,
        rate_limited = t.rate_limited + excluded.rate_limited,
        duration_sum = t.duration_sum + excluded.duration_sum;
    -- Keys that lost runs, or whose runs changed their counters: the row exists, unless the source is
    -- being deleted and the cascade took its totals first; then there is nothing left to correct.
    update public.sync_run_totals as t
    set runs = t.runs + d.runs,
        webhook_runs = t.webhook_runs + d.webhook_runs,
        entities_done = t.entities_done + d.entities_done,
        api_calls = t.api_calls + d.api_calls,
        rate_limited = t.rate_limited + d.rate_limited,
        duration_sum = t.duration_sum + d.duration_sum
    from unnest(deltas) as d
    where d.runs <= 0
      and t.source_id = d.source_id and t.mode = d.mode and t.state = d.state and t.bucket = d.bucket;
end;
$$;
comment on function harvester_run_totals_merge(public.sync_run_totals[]) is
    'Adds signed per-key deltas (a statement''s finished runs in, minus its finished runs out) to sync_run_totals.';

-- One function for the three statement triggers: tg_op says which transition tables exist.
create or replace function tg_sync_runs__totals() returns trigger
    language plpgsql
    set search_path to ''
as $$
declare
    deltas public.sync_run_totals[];
begin
    if tg_op = 'INSERT' then
        if not exists (select 1 from new_runs where state in ('succeeded', 'failed', 'cancelled')) then
            return null;
        end if;
        select array_agg(d::public.sync_run_totals) into deltas from (
            select r.source_id, r.mode, r.state, r.bucket, count(*)::bigint, count(*) filter (where r.webhook)::bigint,
                   sum(r.entities_done)::bigint, sum(r.api_calls)::bigint, sum(r.rate_limited)::bigint, sum(r.seconds)
            from (select n.source_id, n.mode, n.state, n.trigger = 'webhook' as webhook,
                         coalesce(n.entities_done, 0) as entities_done, n.api_calls, n.rate_limited, s.seconds,
                         public.harvester_run_duration_bucket(s.seconds::float8) as bucket
                  from new_runs n
                  cross join lateral (select greatest(extract(epoch from n.finished_at
                                                      - coalesce(n.started_at, n.created_at)), 0) as seconds) s
                  where n.state in ('succeeded', 'failed', 'cancelled')) r
            group by r.source_id, r.mode, r.state, r.bucket) d;
    elsif tg_op = 'DELETE' then
        if not exists (select 1 from old_runs where state in ('succeeded', 'failed', 'cancelled')) then
            return null;
        end if;
        select array_agg(d::public.sync_run_totals) into deltas from (
            select r.source_id, r.mode, r.state, r.bucket, -count(*)::bigint, -count(*) filter (where r.webhook)::bigint,
                   -sum(r.entities_done)::bigint, -sum(r.api_calls)::bigint, -sum(r.rate_limited)::bigint, -sum(r.seconds)
            from (select o.source_id, o.mode, o.state, o.trigger = 'webhook' as webhook,
                         coalesce(o.entities_done, 0) as entities_done, o.api_calls, o.rate_limited, s.seconds,
                         public.harvester_run_duration_bucket(s.seconds::float8) as bucket
                  from old_runs o
                  cross join lateral (select greatest(extract(epoch from o.finished_at
                                                      - coalesce(o.started_at, o.created_at)), 0) as seconds) s
                  where o.state in ('succeeded', 'failed', 'cancelled')) r
            group by r.source_id, r.mode, r.state, r.bucket) d;
    else
        -- A page's progress update of a running run ends here: neither side holds a finished run.
        if not exists (select 1 from old_runs where state in ('succeeded', 'failed', 'cancelled'))
           and not exists (select 1 from new_runs where state in ('succeeded', 'failed', 'cancelled')) then
            return null;
        end if;
        select array_agg(d::public.sync_run_totals) into deltas from (
            select r.source_id, r.mode, r.state, r.bucket, sum(r.sign)::bigint,
                   coalesce(sum(r.sign) filter (where r.webhook), 0)::bigint, sum(r.sign * r.entities_done)::bigint,
                   sum(r.sign * r.api_calls)::bigint, sum(r.sign * r.rate_limited)::bigint, sum(r.sign * r.seconds)
            from (select x.*, public.harvester_run_duration_bucket(s.seconds::float8) as bucket, s.seconds
                  from (select 1 as sign, n.source_id, n.mode, n.state, n.trigger = 'webhook' as webhook,
                               coalesce(n.entities_done, 0) as entities_done, n.api_calls, n.rate_limited,
                               n.finished_at, n.started_at, n.created_at
                        from new_runs n where n.state in ('succeeded', 'failed', 'cancelled')
                        union all
                        select -1, o.source_id, o.mode, o.state, o.trigger = 'webhook',
                               coalesce(o.entities_done, 0), o.api_calls, o.rate_limited,
                               o.finished_at, o.started_at, o.created_at
                        from old_runs o where o.state in ('succeeded', 'failed', 'cancelled')) x
                  cross join lateral (select greatest(extract(epoch from x.finished_at
                                                      - coalesce(x.started_at, x.created_at)), 0) as seconds) s) r
            group by r.source_id, r.mode, r.state, r.bucket) d;
    end if;
    if deltas is not null then
        perform public.harvester_run_totals_merge(deltas);
    end if;
    return null;
end;
$$;
comment on function tg_sync_runs__totals() is
    'AFTER statement triggers on sync_runs: add the statement''s finished runs to sync_run_totals and take out the ones it removed or changed.';

create or replace function tg_sync_runs__totals_truncate() returns trigger
    language plpgsql
    set search_path to ''
as $$
begin
    delete from public.sync_run_totals;
    return null;
end;
$$;
comment on function tg_sync_runs__totals_truncate() is
    'AFTER TRUNCATE trigger on sync_runs: no runs, no totals.';

-- Transition tables allow one event per trigger, hence three.
create or replace trigger _600_run_totals_insert after insert on sync_runs
    referencing new table as new_runs
    for each statement execute function tg_sync_runs__totals();
create or replace trigger _600_run_totals_update after update on sync_runs
    referencing old table as old_runs new table as new_runs
    for each statement execute function tg_sync_runs__totals();
create or replace trigger _600_run_totals_delete after delete on sync_runs
    referencing old table as old_runs
    for each statement execute function tg_sync_runs__totals();
create or replace trigger _600_run_totals_truncate after truncate on sync_runs
    for each statement execute function tg_sync_runs__totals_truncate();

-- Rebuilt from the journal: the lock waits for runs being written and holds new writes until this
-- transaction commits, when the triggers above take over.
lock table sync_runs in share row exclusive mode;
delete from sync_run_totals;
insert into sync_run_totals (source_id, mode, state, bucket, runs, webhook_runs, entities_done, api_calls,
                             rate_limited, duration_sum)
select r.source_id, r.mode, r.state, harvester_run_duration_bucket(s.seconds::float8), count(*),
       count(*) filter (where r.trigger = 'webhook'), sum(coalesce(r.entities_done, 0)), sum(r.api_calls),
       sum(r.rate_limited), sum(s.seconds)
from sync_runs r
cross join lateral (select greatest(extract(epoch from r.finished_at - coalesce(r.started_at, r.created_at)), 0)
                    as seconds) as s
where r.state in ('succeeded', 'failed', 'cancelled')
group by r.source_id, r.mode, r.state, harvester_run_duration_bucket(s.seconds::float8);
