-- Search over the vector projection (issue 5, item 3). Rights, soft delete and drafts are filtered in
-- the same statement as the similarity ordering: a chunk carries its entity's ACL (decision 12), so
-- the filter runs on the rows the HNSW scan yields, and pgvector 0.8's iterative scan keeps the
-- index producing rows until `k` of them pass (or hnsw.max_scan_tuples is spent).

-- name: ConfigureVectorScan :exec
-- Transaction-local settings for the next SearchChunks: HNSW iterative scans in relaxed order (the
-- query re-sorts), the candidate list size, the most index tuples one scan may visit; custom plans
-- always, so each principal's tokens are planned for (ACL index or not), not one cached generic plan.
select set_config('hnsw.iterative_scan', 'relaxed_order', true),
       set_config('hnsw.ef_search', sqlc.arg(ef_search)::integer::text, true),
       set_config('hnsw.max_scan_tuples', sqlc.arg(max_scan_tuples)::integer::text, true),
       set_config('plan_cache_mode', 'force_custom_plan', true),
       -- SearchChunks' exact branch is planned on every call but runs rarely: launching parallel
       -- workers for it (a Gather costs ~9 ms at 100k chunks even when its branch is skipped) would
       -- triple the latency of every search.
       set_config('max_parallel_workers_per_gather', '0', true);

-- name: SearchChunks :many
-- The k chunks nearest to the query vector that the principal may see: ACL overlap, not soft-deleted,
-- drafts only when platform_settings.search_include_drafts or the statuses filter names 'draft', only vectors of the query's model, plus
-- the optional filters (NULL = no filter). A principal who sees few chunks (fewer than
-- `narrow_share` of the table, at least 20 k) is served exactly: `probe` counts them through the ACL
-- index (stopping at that bound), `ann` is skipped and `exact` sorts just those chunks by distance
-- (an HNSW scan would visit ~k / share index tuples to find k of them). Otherwise `ann` is the HNSW
-- iterative scan, and `exact` runs only if `ann` came back short. So k rows always come back when k
-- visible chunks exist.
with settings as materialized (
    select coalesce((select value = 'true'::jsonb from platform_settings where key = 'search_include_drafts'),
                    false) as include_drafts,
           (select greatest(20 * sqlc.arg(k)::integer, (reltuples * sqlc.arg(narrow_share)::float8)::bigint)
            from pg_catalog.pg_class where oid = 'public.entity_chunks'::regclass) as narrow_below
),
probe as materialized (
    select count(*) as visible
    from (select from entity_chunks c
          where c.acl_principals && sqlc.arg(principals)::text[]
            and not c.entity_deleted
            and c.embedding_model = sqlc.arg(model)::text
          limit (select narrow_below from settings)) as seen
),
ann as materialized (
    select c.id, c.entity_id, c.body, c.embedding <=> sqlc.arg(query_embedding)::vector as distance
    from entity_chunks c
    where (select visible from probe) >= (select narrow_below from settings)
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
    limit sqlc.arg(k)::integer
),
exact as materialized (
    select c.id, c.entity_id, c.body, c.embedding <=> sqlc.arg(query_embedding)::vector as distance
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
    order by (c.embedding <=> sqlc.arg(query_embedding)::vector) + 0
    limit sqlc.arg(k)::integer
),
hits as (
    select * from ann where (select count(*) from ann) >= sqlc.arg(k)::integer
    union all
    select * from exact
)
select h.id as chunk_id, h.entity_id, h.body, e.title, e.url, e.natural_key, e.source_id, s.name as source_name,
       e.source_type, e.status, e.source_updated_at, h.distance::float8 as distance
from hits h
join entities e on e.id = h.entity_id
join sources s on s.id = e.source_id
order by h.distance, h.id;

-- name: SearchChunksExact :many
-- SearchChunks' filters with an exact scan (no index): the ground truth for recall and the
-- baseline for latency in bench/vector_search.py.
select c.id as chunk_id, (c.embedding <=> sqlc.arg(query_embedding)::vector)::float8 as distance
from entity_chunks c
where c.acl_principals && sqlc.arg(principals)::text[]
  and not c.entity_deleted
  and (c.entity_status <> 'draft'
       or coalesce((select value = 'true'::jsonb from platform_settings where key = 'search_include_drafts'), false))
  and c.embedding_model = sqlc.arg(model)::text
order by (c.embedding <=> sqlc.arg(query_embedding)::vector) + 0, c.id
limit sqlc.arg(k)::integer;

-- name: SearchChunksText :many
-- Full-text side of hybrid search: chunks matching any query lexeme under the `russian` configuration
-- (Russian stemming for Cyrillic, English for Latin words; index entity_chunks_body_fts_idx), ranked
-- by cover density, with exactly SearchChunks' visibility rules and filters.
select c.id as chunk_id, c.entity_id, c.body, e.title, e.url, e.natural_key, e.source_id, s.name as source_name,
       e.source_type, e.status, e.source_updated_at,
       ts_rank_cd(to_tsvector('russian'::regconfig, c.body),
                  replace(plainto_tsquery('russian'::regconfig, sqlc.arg(query_text)::text)::text, '&', '|')::tsquery
       )::float8 as rank
from entity_chunks c
join entities e on e.id = c.entity_id
join sources s on s.id = e.source_id
where to_tsvector('russian'::regconfig, c.body)
          -- plainto_tsquery ANDs every lexeme; OR-ing them lets ranking, not a strict match, decide.
          @@ replace(plainto_tsquery('russian'::regconfig, sqlc.arg(query_text)::text)::text, '&', '|')::tsquery
  and c.acl_principals && sqlc.arg(principals)::text[]
  and not c.entity_deleted
  and (c.entity_status <> 'draft'
       or coalesce((select value = 'true'::jsonb from platform_settings where key = 'search_include_drafts'), false)
       or 'draft' = any(sqlc.narg(statuses)::text[]))
  and (sqlc.narg(source_ids)::bigint[] is null or c.source_id = any(sqlc.narg(source_ids)::bigint[]))
  and (sqlc.narg(statuses)::text[] is null or c.entity_status = any(sqlc.narg(statuses)::text[]))
  and (sqlc.narg(source_types)::text[] is null or e.source_type = any(sqlc.narg(source_types)::text[]))
  and (sqlc.narg(updated_from)::timestamptz is null or e.source_updated_at >= sqlc.narg(updated_from)::timestamptz)
  and (sqlc.narg(updated_to)::timestamptz is null or e.source_updated_at < sqlc.narg(updated_to)::timestamptz)
order by rank desc, c.id
limit sqlc.arg(k)::integer;
