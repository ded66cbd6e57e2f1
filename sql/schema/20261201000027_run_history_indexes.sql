-- migrate:up transaction:false
-- The tick reads each source's run history every minute (ListScheduleState: last poll, first full
-- sync, last reconciliation, last success, last watchdog run; ListAlertConditions: the latest finished
-- run and the latest reconciliation). sync_runs is the run journal and is never pruned: a source polled
-- every 15 minutes adds 35,000 runs a year. Through sync_runs_source_id_created_at_idx alone, every
-- look-up that asks for a rare kind of run (a reconciliation, a watchdog run) or orders by finished_at
-- read all of the source's runs, and the latest-run CTEs sorted the whole table: with 1,000,000 runs
-- over 100 sources the two queries took 3.2 s and 0.68 s per tick (decision 81). These three partial
-- indexes hold exactly the rows those look-ups need, in their order; each answers with a few index
-- entries per source, whatever the history's length.
-- - terminal runs by finish time: the latest finished run of a source (alerts), its last success;
-- - full and reconciliation runs (a few a month): the schedule's anchors;
-- - watchdog runs (rare): the watchdog's own back-off.
-- A run row's progress updates change no indexed column and stay HOT; its state changes already
-- could not be (state is in sync_runs_one_active_per_source's predicate).
-- transaction:false: the runner sends each statement on its own (CONCURRENTLY refuses a transaction);
-- CONCURRENTLY takes only a SHARE UPDATE EXCLUSIVE lock, so runs keep starting and finishing meanwhile.
set lock_timeout = '5s';
set statement_timeout = '30min';
-- squawk assumes a transaction (.squawk.toml); a transaction:false file runs outside one.
-- squawk-ignore ban-concurrent-index-creation-in-transaction
create index concurrently sync_runs_terminal_idx on sync_runs (source_id, finished_at desc, id desc)
    where state in ('succeeded', 'failed', 'cancelled');
-- squawk-ignore ban-concurrent-index-creation-in-transaction
create index concurrently sync_runs_full_reconciliation_idx on sync_runs (source_id, created_at desc)
    where mode in ('full', 'reconciliation');
-- squawk-ignore ban-concurrent-index-creation-in-transaction
create index concurrently sync_runs_watchdog_idx on sync_runs (source_id, created_at desc)
    where trigger = 'watchdog';

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
