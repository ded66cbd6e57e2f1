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
    -- Runs counted in (positive rows): added, or a row created (a key without one had no finished run).
    insert into public.sync_run_totals as t
    select d.* from unnest(deltas) as d where d.runs > 0
    on conflict on constraint sync_run_totals_pkey do update
    set runs = t.runs + excluded.runs,
        webhook_runs = t.webhook_runs + excluded.webhook_runs,
        entities_done = t.entities_done + excluded.entities_done,
        api_calls = t.api_calls + excluded.api_calls,
        rate_limited = t.rate_limited + excluded.rate_limited,
        duration_sum = t.duration_sum + excluded.duration_sum;
    -- Runs counted out (negative rows): their row exists, unless the source is being deleted and the
    -- cascade took its totals first; then there is nothing left to correct.
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
    'Adds per-key deltas to sync_run_totals: positive rows (runs counted in) upserted, negative rows (runs counted out) subtracted; at most one of each per key.';

-- One function for the three statement triggers: tg_op says which transition tables exist. Each side
-- (the statement's new rows counted in, its old rows counted out) is summed per key by the same query;
-- the table's name and the sign are its only differences, so it is run through EXECUTE, which sees the
-- transition tables as static SQL does. A side is summed only if it holds a finished run: a page's
-- progress update of a running run stops at the `exists` checks.
create or replace function tg_sync_runs__totals() returns trigger
    language plpgsql
    set search_path to ''
as $$
declare
    counted_in boolean := false;
    counted_out boolean := false;
    side record;
    part public.sync_run_totals[];
    deltas public.sync_run_totals[] := '{}';
begin
    if tg_op in ('INSERT', 'UPDATE') then
        counted_in := exists (select 1 from new_runs where state in ('succeeded', 'failed', 'cancelled'));
    end if;
    if tg_op in ('UPDATE', 'DELETE') then
        counted_out := exists (select 1 from old_runs where state in ('succeeded', 'failed', 'cancelled'));
    end if;
    for side in select v.rows, v.sign from (values ('new_runs', 1, counted_in), ('old_runs', -1, counted_out))
                                           as v(rows, sign, wanted)
                where v.wanted loop
        execute format($q$
            select coalesce(array_agg(d::public.sync_run_totals), '{}') from (
                select r.source_id, r.mode, r.state, public.harvester_run_duration_bucket(s.seconds::float8),
                       %1$s * count(*), %1$s * count(*) filter (where r.trigger = 'webhook'),
                       %1$s * sum(coalesce(r.entities_done, 0)), %1$s * sum(r.api_calls),
                       %1$s * sum(r.rate_limited), %1$s * sum(s.seconds)
                from %2$I as r
                cross join lateral (select greatest(extract(epoch from r.finished_at
                                                    - coalesce(r.started_at, r.created_at)), 0) as seconds) as s
                where r.state in ('succeeded', 'failed', 'cancelled')
                group by 1, 2, 3, 4) as d
            $q$, side.sign, side.rows) into part;
        deltas := deltas || part;
    end loop;
    -- The merge takes each side's rows apart: a key both sides hold (a finished run edited in place) gets
    -- the new row's share added and the old row's taken out.
    if cardinality(deltas) > 0 then
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
