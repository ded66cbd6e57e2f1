-- Principals seen in ACLs (issue 14 §4): whom an admin could search as, for the Admin Panel.

-- name: ListAclPrincipals :many
-- Users and groups named in live (not soft-deleted) entities' ACLs with the number of entities naming
-- each, in byte order of the principal (keyset: `after` is the last one of the previous page);
-- optional `kind` (user | group) and `prefix` (of the whole token, e.g. group:jira:) narrow the list.
-- Read from acl_principal_totals (one row per principal and source, kept by triggers on entities,
-- decision 84) in its key's order, so a page reads about page_size × sources rows, whatever the content.
select t.principal::text as principal, sum(t.entities)::bigint as entities
from acl_principal_totals t
where (sqlc.narg(kind)::text is null or starts_with(t.principal, sqlc.narg(kind)::text || ':'))
  and (sqlc.narg(prefix)::text is null or starts_with(t.principal, sqlc.narg(prefix)::text))
  and (sqlc.narg(after)::text is null or t.principal > sqlc.narg(after)::text collate "C")
  -- The same three as one lower bound of the key: a custom plan derives bounds from starts_with itself,
  -- a generic one (the statement prepared after repeated calls) starts its index scan here.
  -- Each argument in byte order, so that greatest() picks the bound the key's order sees.
  and t.principal >= greatest(coalesce(sqlc.narg(kind)::text || ':', '') collate "C",
                              coalesce(sqlc.narg(prefix)::text, '') collate "C",
                              coalesce(sqlc.narg(after)::text, '') collate "C")
group by t.principal
order by t.principal
limit sqlc.arg(page_size)::integer;
