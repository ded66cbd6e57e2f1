-- Vector projection: chunks are child rows of their entity with a content hash (seed 000).

-- name: ListChunkHashes :many
-- The stored chunks of the given entities, to decide which ones to re-embed.
select entity_id, ordinal, content_hash, embedding_model from entity_chunks
where entity_id = any(sqlc.arg(entity_ids)::bigint[])
order by entity_id, ordinal;

-- name: UpsertChunks :execrows
-- Writes new or changed chunks (one jsonb batch); a chunk with an equal hash and model is not rewritten.
insert into entity_chunks as c (entity_id, ordinal, body, content_hash, embedding, embedding_model)
select r.entity_id, r.ordinal, r.body, r.content_hash, r.embedding::vector, r.embedding_model
from jsonb_to_recordset(sqlc.arg(rows)::jsonb) as r(
    entity_id bigint, ordinal integer, body text, content_hash text, embedding text, embedding_model text)
on conflict on constraint entity_chunks_entity_ordinal_key do update
set body = excluded.body,
    content_hash = excluded.content_hash,
    embedding = excluded.embedding,
    embedding_model = excluded.embedding_model
where c.content_hash is distinct from excluded.content_hash
   or c.embedding_model is distinct from excluded.embedding_model;

-- name: DeleteChunksFrom :execrows
-- Removes chunks past an entity's new last ordinal (the text got shorter).
delete from entity_chunks
where entity_id = sqlc.arg(entity_id)::bigint and ordinal >= sqlc.arg(first_removed)::integer;

-- name: ListStoredHashesByIdentity :many
-- What the given items store now (entity hash, each chunk's hash and model), read ahead of their page's
-- transaction so that only new texts are embedded while the source is still being fetched.
select e.source_type, e.source_entity_id, e.content_hash as entity_hash, (e.deleted_at is not null)::boolean as deleted,
       c.content_hash as chunk_hash, c.embedding_model
from jsonb_to_recordset(sqlc.arg(rows)::jsonb) as r(source_type text, source_entity_id text)
cross join lateral (
    -- One identity-key look-up per identity, as in TouchFetched (decision 82).
    select x.id, x.source_type, x.source_entity_id, x.content_hash, x.deleted_at from entities x
    where x.source_id = sqlc.arg(source_id)::bigint
      and x.source_type = r.source_type and x.source_entity_id = r.source_entity_id
    offset 0) as e
left join entity_chunks c on c.entity_id = e.id;
