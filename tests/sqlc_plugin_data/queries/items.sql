-- Insert or update the live item for (owner, external id); the ON CONFLICT target
-- repeats the partial unique index's WHERE.
-- name: UpsertItem :one
INSERT INTO items (
    owner_id, external_id, kind, status, title, note, tags, payload, embedding,
    score, ratio, weight, rank_small, rank_int, blob, uid, due_on, ttl, seen_at
) VALUES (
    sqlc.arg(owner_id), sqlc.arg(external_id), sqlc.arg(kind), sqlc.arg(status), sqlc.arg(title),
    sqlc.narg(note), sqlc.arg(tags), sqlc.narg(payload), sqlc.narg(embedding),
    sqlc.narg(score), sqlc.narg(ratio), sqlc.narg(weight), sqlc.narg(rank_small), sqlc.narg(rank_int),
    sqlc.narg(blob), sqlc.narg(uid), sqlc.narg(due_on), sqlc.narg(ttl), sqlc.narg(seen_at)
)
ON CONFLICT (owner_id, external_id) WHERE deleted_at IS NULL DO UPDATE SET
    title = EXCLUDED.title,
    note = EXCLUDED.note,
    tags = EXCLUDED.tags,
    payload = EXCLUDED.payload,
    embedding = EXCLUDED.embedding
RETURNING *;

-- One item by id.
-- name: GetItem :one
SELECT * FROM items WHERE id = $1;

-- Items whose title contains a fragment (a literal '%' in the pattern must reach PostgreSQL).
-- name: SearchItemsByTitle :many
SELECT id, title, note
FROM items
WHERE title LIKE '%' || sqlc.arg(fragment)::text || '%'
  AND (sqlc.narg(note)::text IS NULL OR note = sqlc.narg(note))
ORDER BY id;

-- Nearest live items to a query vector (pgvector cosine distance).
-- name: NearestItems :many
SELECT id, embedding <=> sqlc.arg(query)::vector AS distance
FROM items
WHERE deleted_at IS NULL AND embedding IS NOT NULL
ORDER BY distance, id
LIMIT sqlc.arg(max_rows)::int;

-- Label computed by a plpgsql function.
-- name: GetItemLabel :one
SELECT item_label(title, tags) AS label FROM items WHERE id = sqlc.arg(id);

-- Live items of some owners, through the view.
-- name: ListLiveItems :many
SELECT * FROM live_items WHERE owner_id = ANY(sqlc.arg(owner_ids)::bigint[]) ORDER BY id;

-- Soft-delete one item.
-- name: SoftDeleteItem :exec
UPDATE items SET deleted_at = sqlc.arg(deleted_at) WHERE id = sqlc.arg(id);

-- Tag every live item of an owner; returns how many rows changed.
-- name: AddTagToOwnerItems :execrows
UPDATE items SET tags = array_append(tags, sqlc.arg(tag)::text)
WHERE owner_id = sqlc.arg(owner_id) AND deleted_at IS NULL;

-- Bulk load items with COPY.
-- name: CopyItems :copyfrom
INSERT INTO items (owner_id, external_id, title, tags, payload, embedding) VALUES ($1, $2, $3, $4, $5, $6);

-- Timestamps of one item.
-- name: GetItemTimes :one
SELECT created_at, updated_at, deleted_at FROM items WHERE id = $1;

-- How long an item lived: NULL while it is live. sqlc calls every cast NOT NULL, hence the directive.
-- nullable: lifetime
-- name: GetItemLifetime :one
SELECT id, (deleted_at - created_at)::interval AS lifetime FROM items WHERE id = sqlc.arg(id);
