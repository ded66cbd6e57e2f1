-- Webhook delivery dedupe (seed 000 "Реал-тайм"): one delivery id is processed once within its TTL.

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
