-- migrate:up
-- The dead-letter queue's depth was counted from its rows on every read: GET /sources per listed source,
-- the queue's summary per call, GET /metrics on every scrape and the alert tick once a minute, each
-- reading every dead letter. With 1,000,000 of them (a source whose payloads changed shape parks every
-- item) a scrape took 155-185 ms, GET /sources 52 ms and a summary 99 ms, growing with the queue, not
-- with the answer (decision 85). dead_letter_totals holds the same figures, kept exact by the statement
-- triggers of sql/triggers/800_dead_letter_totals.sql, which also rebuild it from `dead_letters` when
-- applied: per source and reason, the items parked. A (source, reason) without items has no row.
-- Keyed by source: only one run of a source is active at a time (sync_runs_one_active_per_source) and
-- only runs park or clear items, so two workers never wait on each other's counter rows.
-- `reason` has no CHECK of its own: its values come only from dead_letters, whose
-- dead_letters_reason_check already holds them; a second copy of the set could drift from the first.
set lock_timeout = '5s';
set statement_timeout = '60s';

create table dead_letter_totals (
    source_id bigint not null,
    reason    text   not null,
    items     bigint not null,
    constraint dead_letter_totals_pkey primary key (source_id, reason),
    constraint dead_letter_totals_source_id_fkey foreign key (source_id) references sources (id) on delete cascade,
    constraint dead_letter_totals_items_positive check (items > 0)
);
comment on table dead_letter_totals is
    'Dead letters per source and reason (GET /sources, the queue summary, metrics, alerts), kept exact by statement triggers on dead_letters (sql/triggers/800_dead_letter_totals.sql); a reason without items has no row.';

-- The triggers write as the role that changed the dead letters: the worker parks and clears them, and a
-- source's deletion (the API) cascades to them.
grant insert, update, delete on dead_letter_totals to harvester_api, harvester_worker;

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
