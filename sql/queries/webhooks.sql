-- Webhook intake (seed 000 "Реал-тайм"): delivery dedupe (one delivery id processed once within its TTL)
-- and the pending items of each source that one apply_webhook job takes into one run (decision 145).

-- name: RecordDelivery :one
-- Remembers a delivery for platform_settings.webhook_dedupe_ttl seconds; returns nothing when the id was
-- already seen and has not expired (an expired row not yet pruned counts as new).
insert into webhook_deliveries as w (source_id, delivery_id, expires_at)
values (sqlc.arg(source_id)::bigint, sqlc.arg(delivery_id)::text,
        now() + make_interval(secs => coalesce(
            (select (p.value #>> '{}')::integer from platform_settings p where p.key = 'webhook_dedupe_ttl'), 86400)))
on conflict on constraint webhook_deliveries_pkey do update
set received_at = now(), expires_at = excluded.expires_at
where w.expires_at < now()
returning w.delivery_id;

-- name: PruneDeliveries :execrows
-- Drops delivery ids past their TTL (periodic job).
delete from webhook_deliveries where expires_at < now();

-- name: LockWebhookPending :exec
-- The lock of a source's pending webhook items (decision 145), held until the transaction ends: it
-- serialises adding items together with deciding whether a job must be deferred, and a job's taking of the
-- set, so no item is added after a job took the set on the belief that that job would take it. Ids past
-- the integer range share a key with another source's: they only wait for each other.
select pg_advisory_xact_lock(sqlc.arg(lock_class)::integer, (sqlc.arg(source_id)::bigint % 2147483647)::integer);

-- name: AddWebhookPending :execrows
-- Adds a delivery's items ([{source_type, source_entity_id}], a run scope's shape) to the source's pending
-- set; an item already pending keeps its place.
insert into webhook_pending (source_id, source_type, source_entity_id)
select sqlc.arg(source_id)::bigint, r.source_type, r.source_entity_id
from jsonb_to_recordset(sqlc.arg(items)::jsonb) as r(source_type text, source_entity_id text)
on conflict on constraint webhook_pending_pkey do nothing;

-- name: WebhookJobWaiting :one
-- Whether a todo apply_webhook job for the source exists (it will take the pending set).
select harvester_webhook_job_waiting(sqlc.arg(source_id)::bigint)::boolean as waiting;

-- name: WebhookPendingExists :one
-- Whether the source has items pending.
select exists (select 1 from webhook_pending where source_id = sqlc.arg(source_id)::bigint)::boolean as pending;

-- name: TakeWebhookPending :many
-- Removes and returns up to max_items of the source's pending items, oldest first (the caller's
-- transaction: rolled back, they are pending again).
with taken as (
    delete from webhook_pending p
    where p.source_id = sqlc.arg(source_id)::bigint
      and (p.source_type, p.source_entity_id) in (
        select q.source_type, q.source_entity_id
        from webhook_pending q
        where q.source_id = sqlc.arg(source_id)::bigint
        order by q.received_at, q.source_type, q.source_entity_id
        limit sqlc.arg(max_items)::integer)
    returning p.source_type, p.source_entity_id, p.received_at)
select t.source_type::text as source_type, t.source_entity_id::text as source_entity_id
from taken t
order by t.received_at, t.source_type, t.source_entity_id;

-- name: DropWebhookPending :execrows
-- Forgets a source's pending items (the source is no longer active: its webhooks are dropped, as refused).
delete from webhook_pending where source_id = sqlc.arg(source_id)::bigint;

-- name: ListUnarmedWebhookSources :many
-- Sources with items pending for longer than grace seconds and no todo apply_webhook job to take them:
-- their job ended without taking them (it broke). The tick defers a new one.
select p.source_id
from webhook_pending p
where p.received_at < now() - make_interval(secs => sqlc.arg(grace)::integer)
group by p.source_id
having not harvester_webhook_job_waiting(p.source_id);
