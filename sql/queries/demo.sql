-- The demo's summary and its two example people (app/demo.py).

-- name: DemoEntityCounts :many
-- Live entities per source and type.
select s.name, e.source_type, count(*) as entities
from live_entities e join sources s on s.id = e.source_id
group by s.name, e.source_type order by s.name, e.source_type;

-- name: DemoProjectionCounts :one
-- Rows in the vector and graph projections.
select (select count(*) from entity_chunks) as chunks,
       (select count(*) from entity_chunks where embedding is not null) as embedded,
       (select count(*) from entity_edges) as edges,
       (select count(*) from entity_refs) as refs;

-- name: DemoRefsByKind :many
-- Cross-source claims by the kind of their target.
select target_kind, coalesce(source_hint, '?') as source_hint, count(*) as refs
from entity_refs group by target_kind, source_hint order by refs desc, target_kind;

-- name: DemoDeadLetters :many
-- Dead letters per source and reason.
select s.name, d.reason, count(*) as items
from dead_letters d join sources s on s.id = d.source_id
group by s.name, d.reason order by s.name, d.reason;

-- name: DemoRunStates :many
-- Progress of the given runs.
select r.id, s.name, r.state, coalesce(r.entities_done, 0) as done, r.entities_total, r.error_count, r.error_detail
from sync_runs r join sources s on s.id = r.source_id
where r.id = any(sqlc.arg(ids)::bigint[]) order by r.id;

-- name: DemoPrivateMessage :one
-- A message only named people may see (a private channel or DM: no group in its ACL).
select e.id, e.title, e.body, e.acl_principals
from live_entities e
where e.source_type = 'message' and e.acl_principals is not null and cardinality(e.acl_principals) > 0
  and not exists (select 1 from unnest(e.acl_principals) p where p like 'group:%')
order by cardinality(e.acl_principals) desc, e.id
limit 1;

-- name: DemoPrincipals :many
-- Every principal named in any ACL, most frequent first.
select p::text as principal, count(*) as entities
from entities e, unnest(e.acl_principals) as u(p)
group by p order by count(*) desc, p;
