-- Principals seen in ACLs (issue 14 §4): whom an admin could search as, for the Admin Panel.

-- name: ListAclPrincipals :many
-- Users and groups named in live (not soft-deleted) entities' ACLs with the number of entities naming
-- each, in byte order of the principal (keyset: `after` is the last one of the previous page);
-- optional `kind` (user | group) and `prefix` (of the whole token, e.g. group:jira:) narrow the list.
select u.p::text as principal, count(distinct e.id)::bigint as entities
from entities e
cross join lateral unnest(e.acl_principals) as u(p)
where e.deleted_at is null
  and u.p is not null
  and (sqlc.narg(kind)::text is null or starts_with(u.p, sqlc.narg(kind)::text || ':'))
  and (sqlc.narg(prefix)::text is null or starts_with(u.p, sqlc.narg(prefix)::text))
  and (sqlc.narg(after)::text is null or u.p collate "C" > sqlc.narg(after)::text collate "C")
group by u.p
order by u.p collate "C"
limit sqlc.arg(page_size)::integer;
