-- Embeddings of the vector projection: reuse by content hash, model-change detection, re-embedding.

-- name: ListChunkEmbeddings :many
-- Stored vectors of the given entities made by one model, so a chunk whose text moved to another
-- ordinal reuses its vector instead of being embedded again.
select entity_id, content_hash, embedding::text as embedding
from entity_chunks
where entity_id = any(sqlc.arg(entity_ids)::bigint[])
  and embedding_model = sqlc.arg(model)::text
  and embedding is not null;

-- name: CountChunksByModel :many
-- How many chunks each model embedded (NULL: never embedded); more than one row means a re-embed is due.
select embedding_model, count(*) as chunks from entity_chunks group by embedding_model order by embedding_model;

-- name: ListStaleChunks :many
-- The next batch of chunks not embedded by the given model, in id order after `after_id` (keyset paging).
select id, body, content_hash
from entity_chunks
where id > sqlc.arg(after_id)::bigint and embedding_model is distinct from sqlc.arg(model)::text
order by id
limit sqlc.arg(batch)::integer;

-- name: ReplaceChunkEmbeddings :execrows
-- Swaps in new vectors (one jsonb batch); a chunk whose text changed since it was read keeps what the
-- pipeline wrote, which is already newer.
update entity_chunks c
set embedding = r.embedding::vector, embedding_model = r.embedding_model
from jsonb_to_recordset(sqlc.arg(rows)::jsonb) as r(id bigint, content_hash text, embedding text, embedding_model text)
where c.id = r.id and c.content_hash = r.content_hash;
