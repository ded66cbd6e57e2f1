-- Re-appliable: applied after the migrations on every `harvester db migrate` that changes the schema or
-- this file. webhook_delivery_totals (migration 35) holds, per source, the delivery ids remembered for
-- webhook dedupe, so that GET /metrics reads a few rows instead of the whole dedupe window (decision 90).
-- These triggers keep it exact: a recorded delivery is counted in, the prune job's delete takes the
-- expired ones out.
-- Each session writes the slot of its backend (migration 35), so webhook requests of one source on
-- different sessions do not wait for each other's counter row.
-- Each application rebuilds the table from `webhook_deliveries` under a lock that holds webhook intake
-- meanwhile.

-- The rebuild locks webhook_deliveries; a migrate waits at most this long for the webhook requests being
-- answered, then fails and rolls back (run it again). For the rest of the trigger files' transaction.
set local lock_timeout = '30s';
set local statement_timeout = '15min';

-- One function for the three statement triggers; tg_op says which transition tables exist. Each branch is
-- one static statement (its plan is kept across calls) that adds the statement's rows per source, signed,
-- to this session's slot. Statement triggers, not row triggers: a row trigger would be free for a
-- delivery seen again (no row inserted), but a statement recording many deliveries of one source would
-- update the same counter row once per delivery in one transaction, each update walking the versions the
-- ones before it left (a bulk insert of 1,000,000 had not finished after five minutes).
create or replace function tg_webhook_deliveries__totals() returns trigger
    language plpgsql
    set search_path to ''
as $$
begin
    if tg_op = 'INSERT' then
        insert into public.webhook_delivery_totals as t (source_id, slot, deliveries)
        select r.source_id, pg_catalog.pg_backend_pid() % 16, count(*) from new_rows r group by r.source_id
        on conflict on constraint webhook_delivery_totals_pkey do update set deliveries = t.deliveries + excluded.deliveries;
    elsif tg_op = 'DELETE' then
        insert into public.webhook_delivery_totals as t (source_id, slot, deliveries)
        select r.source_id, pg_catalog.pg_backend_pid() % 16, -count(*) from old_rows r group by r.source_id
        on conflict on constraint webhook_delivery_totals_pkey do update set deliveries = t.deliveries + excluded.deliveries;
    else
        -- Grouped, not joined: a delivery whose source stayed cancels out.
        insert into public.webhook_delivery_totals as t (source_id, slot, deliveries)
        select x.source_id, pg_catalog.pg_backend_pid() % 16, sum(x.sign)::bigint
        from (select r.source_id, 1 as sign from new_rows r
              union all
              select r.source_id, -1 from old_rows r) as x
        group by x.source_id
        having sum(x.sign) <> 0
        on conflict on constraint webhook_delivery_totals_pkey do update set deliveries = t.deliveries + excluded.deliveries;
    end if;
    return null;
end;
$$;
comment on function tg_webhook_deliveries__totals() is
    'AFTER statement triggers on webhook_deliveries: add the statement''s new deliveries to this session''s slot of webhook_delivery_totals and take out the ones it removed or moved.';

create or replace function tg_webhook_deliveries__totals_truncate() returns trigger
    language plpgsql
    set search_path to ''
as $$
begin
    delete from public.webhook_delivery_totals;
    return null;
end;
$$;
comment on function tg_webhook_deliveries__totals_truncate() is
    'AFTER TRUNCATE trigger on webhook_deliveries: no deliveries, no totals.';

-- Transition tables allow one event per trigger, hence three (and no column list: the update trigger also
-- runs for RecordDelivery's update of a delivery seen again, and finds nothing moved).
create or replace trigger _850_webhook_delivery_totals_insert after insert on webhook_deliveries
    referencing new table as new_rows
    for each statement execute function tg_webhook_deliveries__totals();
create or replace trigger _850_webhook_delivery_totals_update after update on webhook_deliveries
    referencing old table as old_rows new table as new_rows
    for each statement execute function tg_webhook_deliveries__totals();
create or replace trigger _850_webhook_delivery_totals_delete after delete on webhook_deliveries
    referencing old table as old_rows
    for each statement execute function tg_webhook_deliveries__totals();
create or replace trigger _850_webhook_delivery_totals_truncate after truncate on webhook_deliveries
    for each statement execute function tg_webhook_deliveries__totals_truncate();

-- Rebuilt from the deliveries, all in slot 0: the lock waits for the requests being answered and holds new
-- ones until this transaction commits, when the triggers above take over.
lock table webhook_deliveries in share row exclusive mode;
delete from webhook_delivery_totals;
insert into webhook_delivery_totals (source_id, slot, deliveries)
select d.source_id, 0, count(*) from webhook_deliveries d group by d.source_id;
