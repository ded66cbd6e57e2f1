-- Admin API bearer tokens: only a SHA-256 of each token is stored; the token is printed once.

-- name: CreateToken :one
-- Stores a new token's hash with its name and scope (admin or read).
insert into api_tokens (name, scope, token_hash)
values (sqlc.arg(name)::text, sqlc.arg(scope)::text, sqlc.arg(token_hash)::text)
returning id;

-- name: AuthenticateToken :one
-- The live token with this hash; marks it used at most once a minute so reads stay cheap.
with t as (
    select id, name, scope, last_used_at from api_tokens
    where token_hash = sqlc.arg(token_hash)::text and revoked_at is null
), touched as (
    update api_tokens a set last_used_at = now()
    from t
    where a.id = t.id and (t.last_used_at is null or t.last_used_at < now() - interval '1 minute')
)
select t.id, t.name, t.scope from t;

-- name: ListTokens :many
-- Token names, scopes and use (never the hash).
select id, name, scope, created_at, last_used_at, revoked_at from api_tokens order by id;

-- name: RevokeToken :execrows
-- Revokes a token by name; it stops authenticating at once.
update api_tokens set revoked_at = now() where name = sqlc.arg(name)::text and revoked_at is null;
