-- migrate:up
-- Aggressive resolve of reconciliation (seed 001): one record known under several ids inside one source
-- (a Jira issue moved between projects) is folded into the entity that lists the other id as an alias.
-- Notes follow seed 003 "Слияние с заметкой под ключом": field by field, the collapsed note's non-empty
-- value wins, updated_by comes from the later note, the collapsed note row is removed; the merged note's
-- updated_at is the collapse time (the _100_timestamps trigger owns updated_at).
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
           and d.source_entity_id = any (s.aliases) and d.id <> s.id
         where s.source_id = p_source_id and s.deleted_at is null and d.deleted_at is null
         order by exists (select 1 from public.entities x
                           where x.source_id = d.source_id and x.source_type = d.source_type
                             and x.source_entity_id = any (d.aliases) and x.deleted_at is null and x.id <> s.id),
                  d.id
         limit 1;
        exit when not found;

        insert into public.entity_notes as n (source_id, source_type, source_entity_id, fact_status, work_kind,
                                              done_text, rest_text, owner_note, updated_by, updated_at)
        select p_source_id, pair.source_type, pair.survivor_key, d.fact_status, d.work_kind, d.done_text,
               d.rest_text, d.owner_note, d.updated_by, d.updated_at
          from public.entity_notes d
         where d.source_id = p_source_id and d.source_type = pair.source_type
           and d.source_entity_id = pair.duplicate_key
        on conflict on constraint entity_notes_pkey do update
        set fact_status = coalesce(nullif(excluded.fact_status, ''), n.fact_status),
            work_kind   = coalesce(nullif(excluded.work_kind, ''), n.work_kind),
            done_text   = coalesce(nullif(excluded.done_text, ''), n.done_text),
            rest_text   = coalesce(nullif(excluded.rest_text, ''), n.rest_text),
            owner_note  = coalesce(nullif(excluded.owner_note, ''), n.owner_note),
            updated_by  = case when excluded.updated_at > n.updated_at then excluded.updated_by else n.updated_by end;

        delete from public.entity_notes
         where source_id = p_source_id and source_type = pair.source_type
           and source_entity_id = pair.duplicate_key;

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
