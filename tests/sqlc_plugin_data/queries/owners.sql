-- Create an owner or return the existing one with that name.
-- name: UpsertOwner :one
INSERT INTO owners (name) VALUES (sqlc.arg(name))
ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name
RETURNING id;

-- Names of every owner, alphabetical.
-- name: ListOwnerNames :many
SELECT name FROM owners ORDER BY name;

-- name: CountOwners :one
SELECT count(*) FROM owners;

-- A parameterless query whose literal '%' must reach PostgreSQL undoubled.
-- name: GetPercentLiteral :one
SELECT '100%'::text AS literal;

-- Echo JSON values back: json is wrapped in Json, jsonb[] element by element in Jsonb.
-- name: EchoJson :one
SELECT sqlc.arg(doc)::json AS doc, sqlc.narg(docs)::jsonb[] AS docs;
