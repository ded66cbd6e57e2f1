-- Search over the vector projection (issue 5, item 3; issue 14 §4). Rights, soft delete and drafts are
-- filtered in the same statement as the similarity ordering: a chunk carries its entity's ACL (decision
-- 12), so the filter runs on the rows the HNSW scan yields, and pgvector 0.8's iterative scan keeps the
-- index producing rows until enough of them pass (or hnsw.max_scan_tuples is spent). Results are
-- entities, not chunks: k results are k distinct entities, each with its best chunk as the snippet.

-- name: ConfigureVectorScan :exec
-- Transaction-local settings for the next SearchEntities: HNSW iterative scans in relaxed order (the
-- query re-sorts), the candidate list size, the most index tuples one scan may visit; custom plans
-- always, so each principal's tokens are planned for (ACL index or not), not one cached generic plan.
select set_config('hnsw.iterative_scan', 'relaxed_order', true),
       set_config('hnsw.ef_search', sqlc.arg(ef_search)::integer::text, true),
       set_config('hnsw.max_scan_tuples', sqlc.arg(max_scan_tuples)::integer::text, true),
       set_config('plan_cache_mode', 'force_custom_plan', true),
       -- SearchEntities' exact branch is planned on every call but runs rarely: launching parallel
       -- workers for it (a Gather costs ~9 ms at 100k chunks even when its branch is skipped) would
       -- triple the latency of every search.
       set_config('max_parallel_workers_per_gather', '0', true);

-- name: SearchEntities :many
-- The k entities nearest to the query vector that the principal may see, each by its nearest chunk
-- (the snippet): ACL overlap, not soft-deleted, drafts only when platform_settings.search_include_drafts
-- or the statuses filter names 'draft', only vectors of the query's model, plus the optional filters
-- (NULL = no filter). A principal who sees few chunks (fewer than `narrow_share` of the table, but the
-- bound at least `narrow_min` and at most `narrow_max` chunks, and never fewer than 20 x k) is served
-- exactly: `probe` counts them through the ACL index (stopping at that bound), `ann` is skipped and `exact`
-- ranks just those chunks. Otherwise `ann` is the HNSW iterative scan over the `candidates` nearest
-- visible chunks (k x a few, so an entity with several near chunks does not crowd the others out), grouped
-- by entity; `exact` runs only if those held fewer than k entities. So k entities always come back when
-- k visible entities exist. The probe is skipped when the planner's statistics already show one of the
-- principals on at least `broad_factor` x the bound (`broad`): it read up to 20 000 rows (20-36 ms at 1 M
-- chunks, more than the HNSW scan) to learn what they said; stale statistics can only send a narrow
-- principal to `ann`, whose rows pass the same filters (and `exact` still fills up to k), never show a
-- chunk the principal may not see. The k results are picked before the join to entities and sources, so
-- that join is k index look-ups, not a merge over the table.
with settings as materialized (
    select coalesce((select value = 'true'::jsonb from platform_settings where key = 'search_include_drafts'),
                    false) as include_drafts,
           -- Capped (narrow_max): the probe's count stops at this bound, so its cost stops growing with the
           -- table beyond 1 M chunks (docs/performance.md "Growth"); HNSW serves anyone above it. Floored
           -- (narrow_min): a few thousand chunks are sorted faster than an HNSW scan walks a table of any
           -- size, and 2 % of a small table is only a few hundred (decision 111).
           (select greatest(20 * sqlc.arg(k)::integer,
                            least(greatest((reltuples * sqlc.arg(narrow_share)::float8)::bigint,
                                           sqlc.arg(narrow_min)::integer),
                                  sqlc.arg(narrow_max)::integer))
            from pg_catalog.pg_class where oid = 'public.entity_chunks'::regclass) as narrow_below
),
broad as materialized (
    -- The largest share of chunks one of the principals is on, by ANALYZE's most common elements (none
    -- listed: 0, and the probe counts), against the bound.
    select coalesce(max(st.most_common_elem_freqs[array_position(st.most_common_elems::text::text[], p.token)])
                    * (select greatest(reltuples, 0) from pg_catalog.pg_class
                       where oid = 'public.entity_chunks'::regclass), 0)
           >= sqlc.arg(broad_factor)::float8 * (select narrow_below from settings) as skip_probe
    from pg_catalog.pg_stats st, unnest(sqlc.arg(principals)::text[]) as p(token)
    where st.schemaname = 'public' and st.tablename = 'entity_chunks' and st.attname = 'acl_principals'
),
probe as materialized (
    select count(*) as visible
    from (select from entity_chunks c
          where not coalesce((select skip_probe from broad), false)
            and c.acl_principals && sqlc.arg(principals)::text[]
            and not c.entity_deleted
            and c.embedding_model = sqlc.arg(model)::text
          limit (select narrow_below from settings)) as seen
),
ann_chunks as materialized (
    select c.id, c.entity_id, c.body, c.embedding <=> sqlc.arg(query_embedding)::vector as distance
    from entity_chunks c
    where ((select visible from probe) >= (select narrow_below from settings)
           or coalesce((select skip_probe from broad), false))
      and c.acl_principals && sqlc.arg(principals)::text[]
      and not c.entity_deleted
      and (c.entity_status <> 'draft' or (select include_drafts from settings)
           or 'draft' = any(sqlc.narg(statuses)::text[]))
      and c.embedding_model = sqlc.arg(model)::text
      and (sqlc.narg(source_ids)::bigint[] is null or c.source_id = any(sqlc.narg(source_ids)::bigint[]))
      and (sqlc.narg(statuses)::text[] is null or c.entity_status = any(sqlc.narg(statuses)::text[]))
      and (sqlc.narg(source_types)::text[] is null and sqlc.narg(updated_from)::timestamptz is null
           and sqlc.narg(updated_to)::timestamptz is null
           or exists (select from entities e
                      where e.id = c.entity_id
                        and (sqlc.narg(source_types)::text[] is null or e.source_type = any(sqlc.narg(source_types)::text[]))
                        and (sqlc.narg(updated_from)::timestamptz is null or e.source_updated_at >= sqlc.narg(updated_from)::timestamptz)
                        and (sqlc.narg(updated_to)::timestamptz is null or e.source_updated_at < sqlc.narg(updated_to)::timestamptz)))
    order by c.embedding <=> sqlc.arg(query_embedding)::vector
    limit sqlc.arg(candidates)::integer
),
ann as materialized (
    select distinct on (a.entity_id) a.id, a.entity_id, a.body, a.distance
    from ann_chunks a
    order by a.entity_id, a.distance, a.id
),
exact as materialized (
    select distinct on (c.entity_id) c.id, c.entity_id, c.body,
           c.embedding <=> sqlc.arg(query_embedding)::vector as distance
    from entity_chunks c
    where (select count(*) from ann) < sqlc.arg(k)::integer
      and c.acl_principals && sqlc.arg(principals)::text[]
      and not c.entity_deleted
      and (c.entity_status <> 'draft' or (select include_drafts from settings)
           or 'draft' = any(sqlc.narg(statuses)::text[]))
      and c.embedding_model = sqlc.arg(model)::text
      and (sqlc.narg(source_ids)::bigint[] is null or c.source_id = any(sqlc.narg(source_ids)::bigint[]))
      and (sqlc.narg(statuses)::text[] is null or c.entity_status = any(sqlc.narg(statuses)::text[]))
      and (sqlc.narg(source_types)::text[] is null and sqlc.narg(updated_from)::timestamptz is null
           and sqlc.narg(updated_to)::timestamptz is null
           or exists (select from entities e
                      where e.id = c.entity_id
                        and (sqlc.narg(source_types)::text[] is null or e.source_type = any(sqlc.narg(source_types)::text[]))
                        and (sqlc.narg(updated_from)::timestamptz is null or e.source_updated_at >= sqlc.narg(updated_from)::timestamptz)
                        and (sqlc.narg(updated_to)::timestamptz is null or e.source_updated_at < sqlc.narg(updated_to)::timestamptz)))
    -- "+ 0" is not the indexed expression: this ordering is computed for every row, never by HNSW.
    order by c.entity_id, (c.embedding <=> sqlc.arg(query_embedding)::vector) + 0, c.id
),
hits as (
    select * from ann where (select count(*) from ann) >= sqlc.arg(k)::integer
    union all
    select * from exact
),
top as materialized (
    select * from hits order by distance, entity_id limit sqlc.arg(k)::integer
)
select h.id as chunk_id, h.entity_id, h.body, e.title, e.url, e.natural_key, e.source_id, s.name as source_name,
       e.source_type, e.status, e.source_updated_at, h.distance::float8 as distance
from top h
join entities e on e.id = h.entity_id
join sources s on s.id = e.source_id
order by h.distance, h.entity_id;

-- name: SearchEntitiesExact :many
-- SearchEntities' visibility rules with an exact scan (no index): each visible entity's nearest chunk,
-- the k nearest entities; the ground truth for recall and the baseline for latency in
-- bench/search_million.py.
select best.chunk_id, best.entity_id, best.distance
from (select distinct on (c.entity_id) c.id as chunk_id, c.entity_id,
             (c.embedding <=> sqlc.arg(query_embedding)::vector)::float8 as distance
      from entity_chunks c
      where c.acl_principals && sqlc.arg(principals)::text[]
        and not c.entity_deleted
        and (c.entity_status <> 'draft'
             or coalesce((select value = 'true'::jsonb from platform_settings where key = 'search_include_drafts'), false))
        and c.embedding_model = sqlc.arg(model)::text
      order by c.entity_id, (c.embedding <=> sqlc.arg(query_embedding)::vector) + 0, c.id) as best
order by best.distance, best.entity_id
limit sqlc.arg(k)::integer;

-- name: TextQueryTerms :many
-- The query's distinct lexemes under the `russian` configuration, each quoted as a tsquery operand exactly as
-- PostgreSQL prints it (plainto_tsquery ANDs them: split on its ' & '), in a stable order; none when the
-- query holds only stop words. app/vector/search.py builds SearchEntitiesText's match queries from them.
select distinct t.term::text as term
from unnest(string_to_array(plainto_tsquery('russian'::regconfig, sqlc.arg(query_text)::text)::text, ' & ')) as t(term)
where t.term <> ''
order by 1;

-- name: SearchEntitiesText :many
-- Full-text side of hybrid search: entities with a chunk matching `match_query` (a tsquery built from the
-- query's `terms`, TextQueryTerms), each by its best chunk, the k best entities, with exactly
-- SearchEntities' visibility rules and filters. A chunk ranks first by how many of the distinct terms it
-- holds (`matched`), then by cover density over any of them (ts_rank_cd of the terms OR-ed), then id
-- (decision 114). So a caller asking first for the chunks holding at least m terms, with m falling, gets
-- the exact top k from the first m that yields k entities, without ranking every chunk holding any term.
-- `repeat_query` matches the lexemes a chunk's text repeats instead (entity_chunk_repeats, each marked by how
-- often: 'word 8' | 'word 21' | 'word 55' is eight times or more; decisions 115, 116): with the chunks
-- holding at least two terms, those are every chunk ranking above one that holds a single term fewer times.
-- A caller passes one of the two; a null query matches nothing.
-- As in SearchEntities, `entities` is read per
-- matching chunk only when an entity-level filter is given (`exists`), and the k results are picked before
-- the join to entities and sources, so that join is k index look-ups, not a hash join over the whole
-- table for every match (decision 112). Matching and ranking read the chunk's stored lexemes
-- (entity_chunk_lexemes, index entity_chunk_lexemes_lexemes_idx), joined to the chunk by id; a chunk's text
-- is read for the k winners only (decision 113). Every column `best` reads of a chunk is in
-- entity_chunks_visibility_idx, so each match is checked by an index-only probe, not a read of its 1.6 KB
-- heap row (decision 117; tests/vector/test_text_ranking.py asserts the plan): add none that is not.
with terms as materialized (
    select array_agg(t.term::tsquery) as each_term,
           array_to_string(array_agg(t.term), ' | ')::tsquery as any_term
    from unnest(sqlc.arg(terms)::text[]) as t(term)
),
best as materialized (
    select distinct on (c.entity_id) c.id as chunk_id, c.entity_id,
           -- one term: every match holds it; no sub-query a row (0.8 us each, at tens of thousands of matches)
           case when cardinality(sqlc.arg(terms)::text[]) = 1 then 1
                else (select count(*) from unnest((select each_term from terms)) as q(term) where l.lexemes @@ q.term)::integer
           end as matched,
           ts_rank_cd(l.lexemes, (select any_term from terms))::float8 as rank
    from (select l.chunk_id, l.lexemes
          from entity_chunk_lexemes l
          where l.lexemes @@ sqlc.narg(match_query)::text::tsquery
          union all
          -- A null query ends its branch at the index scan (a strict operator's null key matches nothing).
          select l.chunk_id, l.lexemes
          from entity_chunk_repeats r
          join entity_chunk_lexemes l on l.chunk_id = r.chunk_id
          where r.lexemes @@ sqlc.narg(repeat_query)::text::tsquery) l
    join entity_chunks c on c.id = l.chunk_id
    where c.acl_principals && sqlc.arg(principals)::text[]
      and not c.entity_deleted
      and (c.entity_status <> 'draft'
           or coalesce((select value = 'true'::jsonb from platform_settings where key = 'search_include_drafts'), false)
           or 'draft' = any(sqlc.narg(statuses)::text[]))
      and (sqlc.narg(source_ids)::bigint[] is null or c.source_id = any(sqlc.narg(source_ids)::bigint[]))
      and (sqlc.narg(statuses)::text[] is null or c.entity_status = any(sqlc.narg(statuses)::text[]))
      and (sqlc.narg(source_types)::text[] is null and sqlc.narg(updated_from)::timestamptz is null
           and sqlc.narg(updated_to)::timestamptz is null
           or exists (select from entities e
                      where e.id = c.entity_id
                        and (sqlc.narg(source_types)::text[] is null or e.source_type = any(sqlc.narg(source_types)::text[]))
                        and (sqlc.narg(updated_from)::timestamptz is null or e.source_updated_at >= sqlc.narg(updated_from)::timestamptz)
                        and (sqlc.narg(updated_to)::timestamptz is null or e.source_updated_at < sqlc.narg(updated_to)::timestamptz)))
    order by c.entity_id, matched desc, rank desc, c.id
),
top as materialized (
    select * from best order by matched desc, rank desc, entity_id limit sqlc.arg(k)::integer
)
select t.chunk_id, t.entity_id, c.body, e.title, e.url, e.natural_key, e.source_id,
       s.name as source_name, e.source_type, e.status, e.source_updated_at, t.matched, t.rank
from top t
join entity_chunks c on c.id = t.chunk_id  -- the text of the k winners only, not of every match
join entities e on e.id = t.entity_id
join sources s on s.id = e.source_id
order by t.matched desc, t.rank desc, t.entity_id;

-- name: RepeatTierChunks :many
-- How many chunks each of `queries` (repeats' tiers, tsqueries over entity_chunk_repeats) matches, in the
-- order given (decision 116). text_search asks it once for the highest tiers and skips a tier too small to
-- give the entities it lacks, so a word no chunk holds eight times or more pays one statement for those
-- tiers instead of three steps. Only the highest are asked: their posting lists are short, while a lower
-- tier of a common word lists most of the table. Counted whole, with no LIMIT: with one, the planner chose
-- a sequential scan whenever the GIN index's pending list made the index's start dear (a sync running):
-- 56 ms a tier at 100 k chunks instead of well under one.
select (select count(*) from entity_chunk_repeats r where r.lexemes @@ t.query::tsquery)::integer as chunks
from unnest(sqlc.arg(queries)::text[]) with ordinality as t(query, n)
order by t.n;

-- name: HighlightChunks :many
-- Up to three fragments of each given chunk around the query's lexemes (ts_headline, same `russian`
-- configuration and OR-query as SearchEntitiesText), for the final page only: ts_headline re-parses the
-- text. Matches are wrapped in U+0002 / U+0003 and fragments separated by U+001E, characters stripped
-- from the text first, so app/vector/search.py can split them into plain segments (no markup reaches a UI).
select c.id as chunk_id,
       ts_headline('russian'::regconfig,
                   translate(c.body, chr(2) || chr(3) || chr(30), ''),
                   replace(plainto_tsquery('russian'::regconfig, sqlc.arg(query_text)::text)::text, '&', '|')::tsquery,
                   'StartSel=' || chr(2) || ', StopSel=' || chr(3) || ', FragmentDelimiter=' || chr(30)
                       || ', MaxFragments=3, MaxWords=20, MinWords=6, HighlightAll=false')::text as headline
from entity_chunks c
where c.id = any(sqlc.arg(chunk_ids)::bigint[]);
