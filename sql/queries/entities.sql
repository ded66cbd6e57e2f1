-- Entities and their graph projection (edges, refs): the loader's writes, the only ones (role
-- harvester_worker), and the reads that summarise them.
-- Batches travel as one jsonb (UpsertEntities: json) array of records: one statement per batch, typed by
-- jsonb_to_recordset.

-- name: UpsertEntities :many
-- Upserts a batch on the identity key; returns only rows inserted or changed (equal hash writes nothing).
-- A changed row, a returning (soft-deleted) one or a re-flagged neighbour is rewritten; status is whatever
-- classify says now, so a restore with an equal payload keeps the old status (seed 000 "Удаления").
-- A written row records its provenance (fetched now by run_id); an unchanged one is left to
-- TouchFetched, and a restore clears the deletion's run and reason. A rewritten row's outgoing edges
-- and refs are dropped in the same statement, before InsertEdges/InsertRefs write what it declares now
-- (seed 003); a freshly inserted row has none. One statement per page: round trips are what a page
-- costs most on a busy machine (docs/performance.md "Load path"). The page travels as json, not jsonb:
-- json_to_recordset reads the text once, where jsonb would first build a tree of the whole page.
with written as (
insert into entities as e (
    source_id, source_type, source_entity_id, natural_key, container, status, title, body, url, author,
    source_created_at, source_updated_at, metadata, acl_principals, aliases, out_of_scope, content_hash,
    last_fetched_at, last_run_id)
select sqlc.arg(source_id)::bigint, r.source_type, r.source_entity_id, r.natural_key, r.container, r.status,
       coalesce(r.title, ''), coalesce(r.body, ''), r.url, r.author, r.source_created_at, r.source_updated_at,
       coalesce(r.metadata, '{}'), r.acl_principals, coalesce(r.aliases, '{}'), coalesce(r.out_of_scope, false),
       r.content_hash, now(), sqlc.arg(run_id)::bigint
from json_to_recordset(sqlc.arg(rows)::json) as r(
    source_type text, source_entity_id text, natural_key text, container text, status text, title text,
    body text, url text, author text, source_created_at timestamptz, source_updated_at timestamptz,
    metadata jsonb, acl_principals text[], aliases text[], out_of_scope boolean, content_hash text)
on conflict on constraint entities_identity_key do update
set natural_key = excluded.natural_key,
    container = excluded.container,
    status = excluded.status,
    title = excluded.title,
    body = excluded.body,
    url = excluded.url,
    author = excluded.author,
    source_created_at = excluded.source_created_at,
    source_updated_at = excluded.source_updated_at,
    metadata = excluded.metadata,
    acl_principals = excluded.acl_principals,
    aliases = excluded.aliases,
    out_of_scope = excluded.out_of_scope,
    content_hash = excluded.content_hash,
    deleted_at = null,
    deleted_by_run_id = null,
    deleted_reason = null,
    last_fetched_at = excluded.last_fetched_at,
    last_run_id = excluded.last_run_id,
    -- What trigger _100_timestamps would stamp; set here, the trigger skips the row (one call less per row).
    updated_at = now()
where e.content_hash is distinct from excluded.content_hash
   or e.deleted_at is not null
   or e.out_of_scope is distinct from excluded.out_of_scope
returning e.id, e.source_type, e.source_entity_id, (e.xmax = 0) as inserted),
dropped_edges as (
    delete from entity_edges where from_entity_id in (select id from written where not inserted)),
dropped_refs as (
    delete from entity_refs where entity_id in (select id from written where not inserted))
select id, source_type, source_entity_id, inserted from written;

-- name: InsertEdges :exec
-- Writes the edges the given entities declare now; edges declared by other entities are untouched.
insert into entity_edges (from_entity_id, source_id, relation, direction, target_type, target_source_entity_id, target_key)
select r.from_entity_id, sqlc.arg(source_id)::bigint, r.relation, coalesce(r.direction, 'outward'), r.target_type,
       r.target_source_entity_id, r.target_key
from jsonb_to_recordset(sqlc.arg(rows)::jsonb) as r(
    from_entity_id bigint, relation text, direction text, target_type text, target_source_entity_id text, target_key text)
on conflict do nothing;

-- name: InsertRefs :exec
-- Writes cross-source mentions as claims (seed 000 "Формат refs").
insert into entity_refs (entity_id, relation, target_kind, target_ref, source_hint)
select r.entity_id, r.relation, r.target_kind, r.target_ref, r.source_hint
from jsonb_to_recordset(sqlc.arg(rows)::jsonb) as r(
    entity_id bigint, relation text, target_kind text, target_ref text, source_hint text)
on conflict do nothing;

-- name: TouchFetched :execrows
-- Provenance of the rows UpsertEntities left alone (equal hash): fetched now by run_id. Only those two
-- columns change, neither indexed, so the update can be HOT; rows this run already wrote are skipped.
-- Each identity is looked up on its own through the identity key (the fenced subquery, decision 82): a
-- join of the page to the source's rows would be planned from statistics that do not know a new or
-- grown source, as a scan of all its rows per page.
update entities e
set last_fetched_at = now(), last_run_id = sqlc.arg(run_id)::bigint
from jsonb_to_recordset(sqlc.arg(rows)::jsonb) as r(source_type text, source_entity_id text)
cross join lateral (
    select x.id from entities x
    where x.source_id = sqlc.arg(source_id)::bigint
      and x.source_type = r.source_type and x.source_entity_id = r.source_entity_id
    offset 0) as k
where e.id = k.id
  and e.last_run_id is distinct from sqlc.arg(run_id)::bigint;

-- name: MarkSeen :exec
-- Records identities a full or reconciliation run enumerated (for "not seen" without touching entities).
insert into run_seen_items (run_id, source_type, source_entity_id)
select sqlc.arg(run_id)::bigint, r.source_type, r.source_entity_id
from jsonb_to_recordset(sqlc.arg(rows)::jsonb) as r(source_type text, source_entity_id text)
on conflict do nothing;

-- name: CountUnseen :one
-- Live entities of the source that the run did not see, and all live entities (mass-deletion guard).
-- Containers the run could not read are left out: their items were not looked at, not found missing.
select count(*) filter (where not exists (
           select 1 from run_seen_items s
           where s.run_id = sqlc.arg(run_id)::bigint
             and s.source_type = e.source_type and s.source_entity_id = e.source_entity_id)) as unseen,
       count(*) as live
from entities e
where e.source_id = sqlc.arg(source_id)::bigint and e.deleted_at is null
  and not coalesce(e.container = any(sqlc.arg(unread_containers)::text[]), false);

-- name: SoftDeleteUnseen :execrows
-- Reconciliation: marks deleted every live entity of the source the run did not see (status untouched),
-- except in containers the run could not read; records the run and the reason (gone_at_source).
-- `offset 0` keeps the NOT EXISTS a per-row probe of run_seen_items' primary key (as in CountUnseen):
-- pulled up into an anti-join, the planner, reading a seen-set that every run fills and empties as a
-- few rows, chose a nested loop over all of the run's rows for each entity, quadratic (235 ms at 2,000
-- entities; decision 78).
update entities e
set deleted_at = now(), deleted_by_run_id = sqlc.arg(run_id)::bigint, deleted_reason = 'gone_at_source'
where e.source_id = sqlc.arg(source_id)::bigint
  and e.deleted_at is null
  and not coalesce(e.container = any(sqlc.arg(unread_containers)::text[]), false)
  and not exists (
      select 1 from run_seen_items s
      where s.run_id = sqlc.arg(run_id)::bigint
        and s.source_type = e.source_type and s.source_entity_id = e.source_entity_id
      offset 0);

-- name: FlagUnseenAsNeighbours :execrows
-- Complete full run (seed 003 "Соседняя задача"): records it did not reach in scope become neighbours.
update entities e
set out_of_scope = true
where e.source_id = sqlc.arg(source_id)::bigint
  and e.deleted_at is null
  and not e.out_of_scope
  and not exists (  -- a per-row probe of the seen-set's key, as in SoftDeleteUnseen (decision 78)
      select 1 from run_seen_items s
      where s.run_id = sqlc.arg(run_id)::bigint
        and s.source_type = e.source_type and s.source_entity_id = e.source_entity_id
      offset 0);

-- name: ClearSeen :exec
-- Empties the seen-set of a finished run.
delete from run_seen_items where run_id = sqlc.arg(run_id)::bigint;

-- name: ClearSeenOfEndedRun :exec
-- Empties the seen-set of a run only once it is terminal (cancelled, or ended by its new holder): safe
-- for a worker that lost the run's lease, since no holder of a terminal run reads the set any more.
delete from run_seen_items s
where s.run_id = sqlc.arg(run_id)::bigint
  and exists (select 1 from sync_runs r
              where r.id = sqlc.arg(run_id)::bigint and r.state in ('succeeded', 'failed', 'cancelled'));

-- name: SoftDeleteItems :execrows
-- Marks deleted the given identities (webhook deletes, items gone at the source), by run_id.
-- One identity-key look-up per identity, as in TouchFetched (decision 82).
update entities e
set deleted_at = now(), deleted_by_run_id = sqlc.arg(run_id)::bigint, deleted_reason = 'gone_at_source'
from jsonb_to_recordset(sqlc.arg(rows)::jsonb) as r(source_type text, source_entity_id text)
cross join lateral (
    select x.id from entities x
    where x.source_id = sqlc.arg(source_id)::bigint
      and x.source_type = r.source_type and x.source_entity_id = r.source_entity_id
    offset 0) as k
where e.id = k.id
  and e.deleted_at is null;

-- name: CollapseDuplicates :one
-- Reconciliation: folds entities named in another live entity's aliases into it (seed 001), recording
-- the run and the reason (collapsed_duplicate) on each folded row.
select harvester_collapse_duplicates(sqlc.arg(source_id)::bigint, sqlc.arg(run_id)::bigint) as collapsed;

-- name: CountLiveEntitiesBySourceType :many
-- Live entities per source (by name) and type (the demo's summary).
select s.name, e.source_type, count(*) as entities
from live_entities e join sources s on s.id = e.source_id
group by s.name, e.source_type order by s.name, e.source_type;

-- name: CountProjectionRows :one
-- Rows in the vector and graph projections of all entities (chunks, embedded chunks, edges, refs).
select (select count(*) from entity_chunks) as chunks,
       (select count(*) from entity_chunks where embedding is not null) as embedded,
       (select count(*) from entity_edges) as edges,
       (select count(*) from entity_refs) as refs;

-- name: CountRefsByTargetKind :many
-- Cross-source claims by the kind of their target and the source they hint at, most frequent first.
select target_kind, coalesce(source_hint, '?') as source_hint, count(*) as refs
from entity_refs group by target_kind, source_hint order by refs desc, target_kind;

-- name: FindPrivateMessage :one
-- A message only named people may see (a private channel or DM: no group in its ACL), most readers first.
select e.id, e.title, e.body, e.acl_principals
from live_entities e
where e.source_type = 'message' and e.acl_principals is not null and cardinality(e.acl_principals) > 0
  and not exists (select 1 from unnest(e.acl_principals) p where p like 'group:%')
order by cardinality(e.acl_principals) desc, e.id
limit 1;

-- name: CountEntitiesByPrincipal :many
-- Every principal named in any entity's ACL with its number of entities, most frequent first.
select p::text as principal, count(*) as entities
from entities e, unnest(e.acl_principals) as u(p)
group by p order by count(*) desc, p;
