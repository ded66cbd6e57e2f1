-- migrate:up
-- GET /metrics counted each source's remembered webhook deliveries on every scrape
-- (harvester_webhook_deliveries_remembered, SummarizeSourcesForMetrics): every delivery id inside the
-- dedupe window (24 h by default). A source sending 10 webhooks a second keeps 864,000 of them, and the
-- count read them all per scrape: 66-112 ms at 1,000,000, growing with the webhook traffic, not with the
-- answer (decision 90). webhook_delivery_totals holds the same figure, kept exact by the statement
-- triggers of sql/triggers/850_webhook_delivery_totals.sql, which also rebuild it when applied.
-- Split into slots: every webhook request records its delivery, and one counter row per source would
-- make concurrent requests of a busy source wait for each other's commit. Each database session adds to
-- the slot of its backend (pid % 16), so two requests of one source share a row only when their sessions'
-- slots collide; the prune job subtracts from its own slot. A slot may go negative; a source's figure is
-- the sum of its slots.
-- Unlogged like webhook_deliveries: after a crash PostgreSQL empties both, so they still agree.
-- No foreign key, as on webhook_deliveries: a deleted source's deliveries stay until they expire, and
-- its counter with them.
set lock_timeout = '5s';
set statement_timeout = '60s';

create unlogged table webhook_delivery_totals (
    source_id  bigint  not null,
    slot       integer not null,
    deliveries bigint  not null,
    constraint webhook_delivery_totals_pkey primary key (source_id, slot),
    constraint webhook_delivery_totals_slot_range check (slot between 0 and 15)
);
comment on table webhook_delivery_totals is
    'Remembered webhook deliveries per source, split into slots by backend (metrics), kept exact by statement triggers on webhook_deliveries (sql/triggers/850_webhook_delivery_totals.sql); a source''s figure is the sum of its slots.';

-- The triggers write as the role that changed the deliveries: the API records them, the worker prunes.
grant insert, update, delete on webhook_delivery_totals to harvester_api, harvester_worker;

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
