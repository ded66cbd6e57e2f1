-- migrate:up
-- Aggressive resolve of reconciliation (seed 001): one record known under several ids inside one source
-- (a Jira issue moved between projects) is folded into the entity that lists the other id or key as an
-- alias (Jira aliases are previous keys: a stale row still carrying an old key is folded away).
-- Notes follow seed 003 "Слияние с заметкой под ключом": field by field, the collapsed note's non-empty
-- value wins, updated_at/updated_by come from the later note, the collapsed note row is removed.
-- Pairs are read one at a time, leaves first, so mutual aliases keep one survivor and a chain A->B->C
-- ends with every note on the live entity.
set lock_timeout = '5s';
set statement_timeout = '60s';

create function harvester_collapse_duplicates(p_source_id bigint) returns integer
    language plpgsql
    set search_path to ''
as $$
declare
    pair record;
    collapsed integer := 0;
begin
    loop
        select s.id as survivor_id, s.source_type, s.source_entity_id as survivor_key,
               d.id as duplicate_id, d.source_entity_id as duplicate_key
          into pair
          from public.entities s
          join public.entities d
            on d.source_id = s.source_id and d.source_type = s.source_type
           and (d.source_entity_id = any (s.aliases) or d.natural_key = any (s.aliases)) and d.id <> s.id
         where s.source_id = p_source_id and s.deleted_at is null and d.deleted_at is null
         order by exists (select 1 from public.entities x
                           where x.source_id = d.source_id and x.source_type = d.source_type
                             and (x.source_entity_id = any (d.aliases) or x.natural_key = any (d.aliases))
                             and x.deleted_at is null and x.id <> s.id),
                  d.id
         limit 1;
        exit when not found;

        -- Both notes are replaced by one merged row written with INSERT, so the later note's updated_at is
        -- kept as data (the _100_timestamps trigger stamps updates only).
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

        update public.entities set deleted_at = now() where id = pair.duplicate_id;
        collapsed := collapsed + 1;
    end loop;
    return collapsed;
end;
$$;
comment on function harvester_collapse_duplicates(bigint) is
    'Soft-deletes live entities named in another live entity''s aliases and merges their notes into it. Returns how many were collapsed.';

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
