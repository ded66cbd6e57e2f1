-- Admin API bearer tokens: only a SHA-256 of each token is stored; the token is shown once.

-- name: CreateToken :one
-- Stores a new token's hash with its name, scope, optional expiry and (search scope) bound principals;
-- no row when a live token has the name.
insert into api_tokens (name, scope, token_hash, expires_at, principals)
values (sqlc.arg(name)::text, sqlc.arg(scope)::text, sqlc.arg(token_hash)::text, sqlc.narg(expires_at)::timestamptz,
        sqlc.narg(principals)::text[])
on conflict (name) where revoked_at is null do nothing
returning id, name, scope, principals, created_at, expires_at, last_used_at, revoked_at;

-- name: AuthenticateToken :one
-- The live, unexpired token with this hash and its expiry (how long the API may cache the answer);
-- marks it used at most once a minute so reads stay cheap.
with t as (
    select id, name, scope, principals, expires_at, last_used_at from api_tokens
    where token_hash = sqlc.arg(token_hash)::text and revoked_at is null
      and (expires_at is null or expires_at > now())
), touched as (
    update api_tokens a set last_used_at = now()
    from t
    where a.id = t.id and (t.last_used_at is null or t.last_used_at < now() - interval '1 minute')
)
select t.id, t.name, t.scope, t.principals, t.expires_at from t;

-- name: ListTokens :many
-- Every token's name, scope, expiry and use (never the hash), oldest first.
select id, name, scope, principals, created_at, expires_at, last_used_at, revoked_at from api_tokens order by id;

-- name: ListTokensPage :many
-- GET /tokens: one keyset page (id ascending, after the cursor's id), optionally of one scope or state
-- (active / expired / revoked, as app/services/tokens.py state_of derives it).
select id, name, scope, principals, created_at, expires_at, last_used_at, revoked_at from api_tokens
where (sqlc.narg(after_id)::bigint is null or id > sqlc.narg(after_id)::bigint)
  and (sqlc.narg(scope)::text is null or scope = sqlc.narg(scope)::text)
  and (sqlc.narg(state)::text is null or sqlc.narg(state)::text = case
         when revoked_at is not null then 'revoked'
         when expires_at is not null and expires_at <= now() then 'expired'
         else 'active' end)
order by id
limit sqlc.arg(lim)::integer;

-- name: GetToken :one
-- One token by id (never the hash).
select id, name, scope, principals, created_at, expires_at, last_used_at, revoked_at from api_tokens
where id = sqlc.arg(id)::bigint;

-- name: RevokeTokenById :one
-- Revokes a live token by id; it stops authenticating at once. No row: unknown or already revoked.
update api_tokens set revoked_at = now()
where id = sqlc.arg(id)::bigint and revoked_at is null
returning id, name, scope, principals, created_at, expires_at, last_used_at, revoked_at;

-- name: RevokeTokenByName :one
-- Revokes the live token with this name (at most one: api_tokens_live_name_key). No row: none is live.
update api_tokens set revoked_at = now()
where name = sqlc.arg(name)::text and revoked_at is null
returning id, name, scope, principals, created_at, expires_at, last_used_at, revoked_at;

-- name: ListenTokenChanges :exec
-- Subscribes the session to token changes (trigger _900_notify on api_tokens): the API's token cache.
listen harvester_api_tokens;
