-- migrate:up transaction:false
-- A source's last success and its anchors are found without reading its failures (decision 89).
-- The tick (ListScheduleState, once a minute) and every scrape of GET /metrics (ListSourceLastSuccess,
-- SummarizeSourcesForMetrics, LatestCompleteness) read each source's last success, first full sync and
-- reconciliations. Through migration 27's indexes they walked past every run that did not qualify:
-- - the last success, every failed or cancelled run finished since (sync_runs_terminal_idx): a source
--   failing for a week at a 15-minute interval has 672 of them, for a year 35,000; 10,000 cost 4.5 ms
--   per reader per source at 1,000,000 runs;
-- - the first full sync and the reconciliations, every full run (sync_runs_full_reconciliation_idx): a
--   source that never finished its first full sync is sent a full sync at every interval, and each fails.
-- Three partial indexes hold exactly the rows each look-up wants, in its order:
-- - sync_runs_succeeded_idx: succeeded runs by finish time; the last success is the source's first entry;
-- - sync_runs_anchor_idx: full and reconciliation runs queued, running or succeeded, by creation time;
--   the first full sync is the source's first entry;
-- - sync_runs_reconciliation_idx: reconciliation runs, newest first; the last one, the last scheduled
--   one and the latest audited one (a few a month).
-- sync_runs_full_reconciliation_idx then serves nothing and is dropped.
-- A run enters the first two when its state changes (such an update is never HOT already: state is in
-- sync_runs_one_active_per_source's predicate); its progress updates change no indexed column.
-- transaction:false: the runner sends each statement on its own (CONCURRENTLY refuses a transaction);
-- CONCURRENTLY takes only a SHARE UPDATE EXCLUSIVE lock, so runs keep starting and finishing meanwhile.
set lock_timeout = '5s';
set statement_timeout = '30min';
-- squawk assumes a transaction (.squawk.toml); a transaction:false file runs outside one.
-- squawk-ignore ban-concurrent-index-creation-in-transaction
create index concurrently sync_runs_succeeded_idx on sync_runs (source_id, finished_at desc)
    where state = 'succeeded';
-- squawk-ignore ban-concurrent-index-creation-in-transaction
create index concurrently sync_runs_anchor_idx on sync_runs (source_id, created_at)
    where mode in ('full', 'reconciliation') and state in ('queued', 'running', 'succeeded');
-- squawk-ignore ban-concurrent-index-creation-in-transaction
create index concurrently sync_runs_reconciliation_idx on sync_runs (source_id, created_at desc)
    where mode = 'reconciliation';
drop index concurrently sync_runs_full_reconciliation_idx;

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
