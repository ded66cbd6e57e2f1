-- migrate:up transaction:false
-- GET /metrics sums failed alert deliveries on every scrape (harvester_alert_delivery_failures_total,
-- SumAlertSendFailures) over alert_incidents, which is never pruned: an incident is opened and resolved
-- per episode, so a source whose runs fail and recover by turns adds one every other run, 17,000 a year
-- at a 15-minute interval. The sum read every incident ever opened: 1,000,000 took 44-59 ms a scrape
-- (decision 91). Nearly every incident was delivered at the first attempt; this index holds only those
-- with a failed attempt, and the sum reads them alone (index-only).
-- A failed attempt changes send_failures, so that update is not HOT; it happens only when a channel
-- refuses a notification.
-- transaction:false: the runner sends each statement on its own (CONCURRENTLY refuses a transaction);
-- CONCURRENTLY takes only a SHARE UPDATE EXCLUSIVE lock, so incidents keep opening and closing meanwhile.
set lock_timeout = '5s';
set statement_timeout = '30min';
-- squawk assumes a transaction (.squawk.toml); a transaction:false file runs outside one.
-- squawk-ignore ban-concurrent-index-creation-in-transaction
create index concurrently alert_incidents_send_failures_idx on alert_incidents (send_failures)
    where send_failures > 0;

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
