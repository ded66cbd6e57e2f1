-- migrate:up
-- Reconciliation's collapse step without comparing every pair of a source's rows (issue 15 §5,
-- decision 79). The pair query joined entities to itself on "d's id or key is one of s's aliases", an
-- OR of two ANYs that no index answers: the planner compared every pair (25 M row comparisons at 5,000
-- entities: 3.6 s with no statistics; 7.3 s at 100,000 entities with fresh statistics), and the loop
-- repeats it once per collapsed pair. Now the query starts from the rows that list aliases
-- (entities_alias_holders_idx, migration 25) and looks each alias up by equality through the identity
-- key and the natural-key index; the "leaves first" order is computed the same way. Same pairs, same
-- order, same notes merge: only how the rows are found changes (100,000 entities, 1,000 of them listing
-- an alias, 100 collapsed: 7.3 → 0.27 s).
set lock_timeout = '5s';
set statement_timeout = '60s';

create or replace function harvester_collapse_duplicates(p_source_id bigint, p_run_id bigint) returns integer
    language plpgsql
    set search_path to ''
as $$
declare
    pair record;
    collapsed integer := 0;
begin
    loop
        -- Only live rows that list aliases are read (entities_alias_holders_idx), and each alias is one
        -- equality probe of the identity key and one of the natural-key index. `offset 0` keeps each
        -- alias's pair of probes a subquery of its own, with the liveness and self checks outside it:
        -- given equalities and nothing else, the planner picks those indexes whatever its statistics say.
        select s.id as survivor_id, s.source_type, s.source_entity_id as survivor_key,
               d.id as duplicate_id, d.source_entity_id as duplicate_key
          into pair
          from public.entities s
          cross join lateral unnest(s.aliases) as a(alias)
          cross join lateral (
              select k.id, k.source_entity_id, k.aliases, k.source_type, k.deleted_at
                from public.entities k
               where k.source_id = p_source_id and k.source_type = s.source_type and k.source_entity_id = a.alias
              union all
              select k.id, k.source_entity_id, k.aliases, k.source_type, k.deleted_at
                from public.entities k
               where k.source_id = p_source_id and k.natural_key = a.alias
              offset 0
          ) d
         where s.source_id = p_source_id and s.deleted_at is null and s.aliases <> '{}'
           and d.source_type = s.source_type and d.deleted_at is null and d.id <> s.id
         -- Leaves first: a duplicate that itself names another live row (not s) waits for that one.
         order by exists (select 1
                            from unnest(d.aliases) as b(alias)
                            cross join lateral (
                                select x.id, x.source_type, x.deleted_at from public.entities x
                                 where x.source_id = p_source_id and x.source_type = s.source_type
                                   and x.source_entity_id = b.alias
                                union all
                                select x.id, x.source_type, x.deleted_at from public.entities x
                                 where x.source_id = p_source_id and x.natural_key = b.alias
                                offset 0) x
                           where x.source_type = s.source_type and x.deleted_at is null and x.id <> s.id),
                  d.id
         limit 1;
        exit when not found;

        with old as (
            delete from public.entity_notes n
             where n.source_id = p_source_id and n.source_type = pair.source_type
               and n.source_entity_id in (pair.survivor_key, pair.duplicate_key)
            returning n.*
        ), s as (
            select * from old where source_entity_id = pair.survivor_key
        ), d as (
            select * from old where source_entity_id = pair.duplicate_key
        )
        insert into public.entity_notes (source_id, source_type, source_entity_id, fact_status, work_kind,
                                         done_text, rest_text, owner_note, updated_by, created_at, updated_at)
        select p_source_id, pair.source_type, pair.survivor_key,
               coalesce(nullif(d.fact_status, ''), s.fact_status),
               coalesce(nullif(d.work_kind, ''), s.work_kind),
               coalesce(nullif(d.done_text, ''), s.done_text),
               coalesce(nullif(d.rest_text, ''), s.rest_text),
               coalesce(nullif(d.owner_note, ''), s.owner_note),
               case when s.updated_at is null or d.updated_at > s.updated_at then d.updated_by else s.updated_by end,
               coalesce(least(s.created_at, d.created_at), s.created_at, d.created_at),
               coalesce(greatest(s.updated_at, d.updated_at), s.updated_at, d.updated_at)
          from d full join s on true;

        update public.entities
           set deleted_at = now(), deleted_by_run_id = p_run_id, deleted_reason = 'collapsed_duplicate'
         where id = pair.duplicate_id;
        collapsed := collapsed + 1;
    end loop;
    return collapsed;
end;
$$;
comment on function harvester_collapse_duplicates(bigint, bigint) is
    'Soft-deletes (reason collapsed_duplicate, by run p_run_id) live entities named in another live entity''s aliases and merges their notes into it. Returns how many were collapsed.';

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
