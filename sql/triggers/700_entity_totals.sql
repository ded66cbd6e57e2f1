-- Re-appliable: applied after the migrations on every `harvester db migrate` that changes the schema or
-- this file. source_entity_totals and acl_principal_totals (migration 30) hold, per source, the live
-- entities and, per principal, the live entities whose ACL names it, so that GET /sources and
-- GET /principals read a few rows instead of every entity (decision 84). These triggers keep them exact:
-- an entity counts while it is live (deleted_at null), under its source and each distinct principal of
-- its acl_principals; a statement that inserts, soft-deletes, revives, re-permissions or deletes entities
-- adds the new rows' share and takes the old rows' out.
-- Statement triggers with transition tables, as for the run totals (decision 83): a page of the pipeline
-- is one statement, and a statement that changes many entities (a reconciliation's soft-deletes, a
-- source's deletion) sums them first and writes each totals row once.
-- Most updates change none of the three columns (the provenance touch of unchanged rows, a rewritten
-- body): they stop after one grouping of the statement's old and new rows.
-- Each application rebuilds both tables from `entities` under a lock that holds entity writes meanwhile.

-- The triggers and the rebuild lock entities; a migrate waits at most this long for the pages being
-- written, then fails and rolls back (run it again). For the rest of the trigger files' transaction.
set local lock_timeout = '30s';
set local statement_timeout = '15min';

-- One function for the three statement triggers; tg_op says which transition tables exist. Each branch
-- is static SQL (its plan is kept across calls, where EXECUTE would plan every page again) and gathers
-- the rows that count as signed shares (entity_totals_share): a new live row +1, an old live row -1.
-- An update counts only the pairs whose liveness, source or ACL changed, both sides of each.
create or replace function tg_entities__totals() returns trigger
    language plpgsql
    set search_path to ''
as $$
declare
    counted public.entity_totals_share[];
    live_deltas public.source_entity_totals[];
    principal_deltas public.acl_principal_totals[];
begin
    if tg_op = 'INSERT' then
        select coalesce(array_agg(row(r.id, r.source_id, r.acl_principals, 1)::public.entity_totals_share), '{}')
        into counted
        from new_rows r where r.deleted_at is null;
    elsif tg_op = 'DELETE' then
        select coalesce(array_agg(row(r.id, r.source_id, r.acl_principals, -1)::public.entity_totals_share), '{}')
        into counted
        from old_rows r where r.deleted_at is null;
    else
        -- Grouped rather than joined on id: an entity live on both sides with the same source and ACL
        -- cancels out; one whose liveness, source or ACL changed leaves its old share (-1) and its new
        -- one (+1). A join's plan would be made once, from the first call's transition tables: planned
        -- for one row, it compared every old row with every new one.
        select coalesce(array_agg(row(g.id, g.source_id, g.acl, g.sign)::public.entity_totals_share), '{}')
        into counted
        from (select x.id, x.source_id, x.acl, sum(x.sign)::integer as sign
              from (select r.id, r.source_id, r.acl_principals as acl, 1 as sign
                    from new_rows r where r.deleted_at is null
                    union all
                    select r.id, r.source_id, r.acl_principals, -1
                    from old_rows r where r.deleted_at is null) as x
              group by x.id, x.source_id, x.acl
              having sum(x.sign) <> 0) as g;
    end if;
    if cardinality(counted) = 0 then
        return null;  -- most updates: the provenance touch of unchanged rows, a rewritten body
    end if;

    select coalesce(array_agg(row(d.source_id, d.delta)::public.source_entity_totals), '{}')
    into live_deltas
    from (select c.source_id, sum(c.sign) as delta from unnest(counted) as c group by 1) as d
    where d.delta <> 0;
    -- A principal counts an entity once, however often its ACL repeats it (spelled as in the rebuild below).
    select coalesce(array_agg(row(d.principal, d.source_id, d.delta)::public.acl_principal_totals), '{}')
    into principal_deltas
    from (select u.p as principal, c.source_id, sum(c.sign) as delta
          from unnest(counted) as c
          cross join lateral (select distinct x.p from unnest(c.acl) as x(p) where x.p is not null) as u
          group by 1, 2) as d
    where d.delta <> 0;

    -- Per key one net delta. A row that exists is deleted when nothing would be left (before the update:
    -- each statement sees the ones before it), or else updated in place (a plain update: an upsert locks
    -- each row first, one more WAL record a key). A key without a row is inserted; a negative one without
    -- a row is dropped (a source's deletion cascaded to its totals first). Never below zero: rows written
    -- past the triggers cannot fail a page; the next migrate's rebuild corrects the figures.
    update public.source_entity_totals as t
    set live = greatest(t.live + d.live, 0)
    from unnest(live_deltas) as d
    where t.source_id = d.source_id;
    insert into public.source_entity_totals as t
    select d.* from unnest(live_deltas) as d
    where d.live > 0 and not exists (select 1 from public.source_entity_totals x where x.source_id = d.source_id)
    on conflict on constraint source_entity_totals_pkey do update set live = t.live + excluded.live;

    delete from public.acl_principal_totals as t
    using unnest(principal_deltas) as d
    where d.entities < 0 and t.principal = d.principal and t.source_id = d.source_id
      and t.entities + d.entities <= 0;
    update public.acl_principal_totals as t
    set entities = t.entities + d.entities
    from unnest(principal_deltas) as d
    where t.principal = d.principal and t.source_id = d.source_id;
    insert into public.acl_principal_totals as t
    select d.* from unnest(principal_deltas) as d
    where d.entities > 0
      and not exists (select 1 from public.acl_principal_totals x
                      where x.principal = d.principal and x.source_id = d.source_id)
    on conflict on constraint acl_principal_totals_pkey do update set entities = t.entities + excluded.entities;
    return null;
end;
$$;
comment on function tg_entities__totals() is
    'AFTER statement triggers on entities: add the statement''s live rows to source_entity_totals and acl_principal_totals, and take out the ones it removed, soft-deleted or re-permissioned.';

create or replace function tg_entities__totals_truncate() returns trigger
    language plpgsql
    set search_path to ''
as $$
begin
    delete from public.source_entity_totals;
    delete from public.acl_principal_totals;
    return null;
end;
$$;
comment on function tg_entities__totals_truncate() is
    'AFTER TRUNCATE trigger on entities: no entities, no totals.';

-- Transition tables allow one event per trigger, hence three.
create or replace trigger _700_entity_totals_insert after insert on entities
    referencing new table as new_rows
    for each statement execute function tg_entities__totals();
create or replace trigger _700_entity_totals_update after update on entities
    referencing old table as old_rows new table as new_rows
    for each statement execute function tg_entities__totals();
create or replace trigger _700_entity_totals_delete after delete on entities
    referencing old table as old_rows
    for each statement execute function tg_entities__totals();
create or replace trigger _700_entity_totals_truncate after truncate on entities
    for each statement execute function tg_entities__totals_truncate();

-- Rebuilt from the entities: the lock waits for pages being written and holds new writes until this
-- transaction commits, when the triggers above take over.
lock table entities in share row exclusive mode;
delete from source_entity_totals;
delete from acl_principal_totals;
insert into source_entity_totals (source_id, live)
select e.source_id, count(*) from entities e where e.deleted_at is null group by e.source_id;
insert into acl_principal_totals (principal, source_id, entities)
select u.p, e.source_id, count(*)
from entities e
cross join lateral (select distinct x.p from unnest(e.acl_principals) as x(p) where x.p is not null) as u
where e.deleted_at is null
group by u.p, e.source_id;
