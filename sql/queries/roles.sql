-- Database roles a process assumes after connecting (sql/schema/*_roles.sql).

-- name: IsMemberOfRole :one
-- Whether the login user may SET ROLE to the given role (a dedicated login may already be it).
select pg_has_role(current_user, sqlc.arg(role)::text, 'MEMBER')::boolean as member;

-- name: SetApiRole :exec
-- Every pooled API connection acts as harvester_api, so the API provably cannot write entity tables.
set role harvester_api;

-- name: MissingWorkerPrivilege :one
-- The first privilege the worker's login lacks (own or inherited from harvester_worker), '' when none.
select coalesce(
    case when not has_schema_privilege('public', 'USAGE') then 'USAGE on schema public' end,
    case when not has_table_privilege('public.procrastinate_jobs', 'UPDATE') then 'UPDATE on procrastinate_jobs' end,
    case when not has_table_privilege('public.procrastinate_workers', 'INSERT') then 'INSERT on procrastinate_workers' end,
    case when not has_table_privilege('public.sync_runs', 'UPDATE') then 'UPDATE on sync_runs' end,
    case when not has_table_privilege('public.entities', 'INSERT') then 'INSERT on entities' end,
    ''
)::text as missing;
