-- Re-appliable: applied after the migrations on every `harvester db migrate` that changes the schema or
-- this file. dead_letter_totals (migration 31) holds, per source and reason, the items parked in the
-- dead-letter queue, so that GET /sources, the queue's summary, GET /metrics and the alert tick read a
-- few rows instead of the whole queue (decision 85). These triggers keep it exact: a statement that parks,
-- re-parks with another reason, moves or clears dead letters adds its new rows and takes out its old ones.
-- Statement triggers with transition tables, as for the run and entity totals (decisions 83, 84): a page's
-- clean-up is one statement, and a statement that removes many (a source's deletion) sums them first and
-- writes each totals row once.
-- Most updates change neither column: a re-failing item keeps its reason and only counts an attempt.
-- They stop after one grouping of the statement's old and new rows.
-- Each application rebuilds the table from `dead_letters` under a lock that holds queue writes meanwhile.

-- The rebuild locks dead_letters; a migrate waits at most this long for the pages being written, then
-- fails and rolls back (run it again). For the rest of the trigger files' transaction.
set local lock_timeout = '30s';
set local statement_timeout = '15min';

-- One function for the three statement triggers; tg_op says which transition tables exist. Each branch is
-- static SQL (its plan is kept across calls) and sums the statement's rows per key into signed deltas.
create or replace function tg_dead_letters__totals() returns trigger
    language plpgsql
    set search_path to ''
as $$
declare
    deltas public.dead_letter_totals[];
begin
    if tg_op = 'INSERT' then
        select coalesce(array_agg(row(d.source_id, d.reason, d.items)::public.dead_letter_totals), '{}')
        into deltas
        from (select r.source_id, r.reason, count(*) as items from new_rows r group by 1, 2) as d;
    elsif tg_op = 'DELETE' then
        select coalesce(array_agg(row(d.source_id, d.reason, d.items)::public.dead_letter_totals), '{}')
        into deltas
        from (select r.source_id, r.reason, -count(*) as items from old_rows r group by 1, 2) as d;
    else
        -- Grouped, not joined on id (a join's plan is made once, for the first call's row counts): an item
        -- whose source and reason stayed cancels out.
        select coalesce(array_agg(row(d.source_id, d.reason, d.items)::public.dead_letter_totals), '{}')
        into deltas
        from (select x.source_id, x.reason, sum(x.sign)::bigint as items
              from (select r.source_id, r.reason, 1 as sign from new_rows r
                    union all
                    select r.source_id, r.reason, -1 from old_rows r) as x
              group by 1, 2
              having sum(x.sign) <> 0) as d;
    end if;
    if cardinality(deltas) = 0 then
        return null;  -- most updates: an item failing again for the same reason
    end if;

    -- Per key one net delta, applied as in 700_entity_totals.sql: a row that would be left at zero or
    -- less is deleted first (each statement sees the ones before it), then the others are updated in
    -- place, then a key without a row is inserted; a negative one without a row is dropped (a source's
    -- deletion cascaded to its totals first).
    delete from public.dead_letter_totals as t
    using unnest(deltas) as d
    where d.items < 0 and t.source_id = d.source_id and t.reason = d.reason and t.items + d.items <= 0;
    update public.dead_letter_totals as t
    set items = t.items + d.items
    from unnest(deltas) as d
    where t.source_id = d.source_id and t.reason = d.reason;
    insert into public.dead_letter_totals as t
    select d.* from unnest(deltas) as d
    where d.items > 0
      and not exists (select 1 from public.dead_letter_totals x where x.source_id = d.source_id and x.reason = d.reason)
    on conflict on constraint dead_letter_totals_pkey do update set items = t.items + excluded.items;
    return null;
end;
$$;
comment on function tg_dead_letters__totals() is
    'AFTER statement triggers on dead_letters: add the statement''s new rows to dead_letter_totals and take out the ones it removed or changed.';

create or replace function tg_dead_letters__totals_truncate() returns trigger
    language plpgsql
    set search_path to ''
as $$
begin
    delete from public.dead_letter_totals;
    return null;
end;
$$;
comment on function tg_dead_letters__totals_truncate() is
    'AFTER TRUNCATE trigger on dead_letters: no dead letters, no totals.';

-- Transition tables allow one event per trigger, hence three.
create or replace trigger _800_dead_letter_totals_insert after insert on dead_letters
    referencing new table as new_rows
    for each statement execute function tg_dead_letters__totals();
create or replace trigger _800_dead_letter_totals_update after update on dead_letters
    referencing old table as old_rows new table as new_rows
    for each statement execute function tg_dead_letters__totals();
create or replace trigger _800_dead_letter_totals_delete after delete on dead_letters
    referencing old table as old_rows
    for each statement execute function tg_dead_letters__totals();
create or replace trigger _800_dead_letter_totals_truncate after truncate on dead_letters
    for each statement execute function tg_dead_letters__totals_truncate();

-- Rebuilt from the queue: the lock waits for pages being written and holds new writes until this
-- transaction commits, when the triggers above take over.
lock table dead_letters in share row exclusive mode;
delete from dead_letter_totals;
insert into dead_letter_totals (source_id, reason, items)
select d.source_id, d.reason, count(*) from dead_letters d group by d.source_id, d.reason;
