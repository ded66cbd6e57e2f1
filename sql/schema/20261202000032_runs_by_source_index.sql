-- migrate:up transaction:false
-- GET /runs?source_id=… (and GET /sources/{id}/runs) pages a source's run history newest first, keyset on
-- id (ListRunsPage). With no index on (source_id, id) the plan walks the whole journal backwards through
-- the primary key and drops every other source's runs: cheap for a source that ran a minute ago, but a
-- source that went quiet long ago (disconnected, paused, failing before it starts) has its runs at the
-- far end: 146 ms for its first page at 1,000,000 runs over 100 sources, so about 1.5 s at 10,000,000
-- (decision 86). sync_runs_source_id_created_at_idx orders by created_at, which the keyset cannot use.
-- This index holds each source's runs in the page's order: the first page of any source reads its 51
-- newest entries (1.2 ms). Neither column ever changes, so a run's progress updates stay HOT.
-- transaction:false: the runner sends each statement on its own (CONCURRENTLY refuses a transaction);
-- CONCURRENTLY takes only a SHARE UPDATE EXCLUSIVE lock, so runs keep starting and finishing meanwhile.
set lock_timeout = '5s';
set statement_timeout = '30min';
-- squawk assumes a transaction (.squawk.toml); a transaction:false file runs outside one.
-- squawk-ignore ban-concurrent-index-creation-in-transaction
create index concurrently sync_runs_source_id_id_idx on sync_runs (source_id, id desc);

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
