-- Database roles a process assumes after connecting (sql/schema/*_roles.sql).

-- name: IsMemberOfRole :one
-- Whether the login user may SET ROLE to the given role (a dedicated login may already be it).
select pg_has_role(current_user, sqlc.arg(role)::text, 'MEMBER')::boolean as member;

-- name: SetApiRole :exec
-- Every pooled API connection acts as harvester_api, so the API provably cannot write entity tables.
set role harvester_api;
