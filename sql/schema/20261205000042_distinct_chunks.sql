-- migrate:up
-- Each text of an entity once among its chunks (decision 128), for the rows stored before that rule.
-- Since decision 128 the vector stage stores a text that repeats inside one entity (a log attachment
-- repeating its lines, a template pasted twice) once, at its first place. Rows written before keep their
-- copies until the entity's text changes, and a query near such a text finds several copies of one entity
-- among its nearest neighbours in place of other entities. harvester_distinct_chunks() removes those
-- copies (decision 130); called once below, and callable again (it finds nothing the second time).
--
-- The rows kept are not renumbered: the ordinals of such an entity keep gaps until its text changes, when
-- the stage writes its chunks densely again (it upserts by ordinal and drops everything past the new
-- count). Renumbering would be an update of an indexed column, so a new row version and one HNSW insert
-- per moved chunk, for nothing a search reads (ordinals only order an entity's chunks).
--
-- Cost: one pass over entity_chunks (copies found by entity and text hash), then the deletes; only the
-- removed rows are locked, and the HNSW index is not touched until vacuum (docs/performance.md, "Each text
-- of an entity once among its chunks").
set lock_timeout = '5s';
set statement_timeout = '30min';

create function harvester_distinct_chunks() returns bigint
    language sql
    set search_path to ''
as $$
    -- The chunk's content_hash is the SHA-256 of its text: an equal hash in one entity is the same text.
    with copies as (
        select c.id
          from (select x.id,
                       row_number() over (partition by x.entity_id, x.content_hash order by x.ordinal) as n
                  from public.entity_chunks x) as c
         where c.n > 1),
    removed as (
        delete from public.entity_chunks c
         using copies
         where c.id = copies.id
        returning 1)
    select count(*) from removed;
$$;
comment on function harvester_distinct_chunks() is
    'Removes every chunk whose text an earlier chunk of the same entity holds (decision 130); returns how many. The ordinals kept may have gaps until the entity''s text changes.';

select harvester_distinct_chunks();
