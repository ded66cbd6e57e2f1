-- migrate:up transaction:false
-- GET /sources/{id}/dead-letters?reason=… (ListDeadLetters) pages a source's queue oldest first, keyset on
-- id. No index held a source's items of one reason in id order, so the plan walked the queue through the
-- primary key and dropped every other source's and reason's items. The case that matters is a storm: a
-- source whose payloads changed shape parks every item as `malformed`, and the operator then asks for the
-- items that failed for another reason. With 1,000,000 malformed items in one source, a page of its
-- `not_found` items (none) took 118-148 ms, ten times that at 10,000,000 (decision 87). This index holds
-- each reason's items per source in the page's order: that page takes 0.1 ms.
-- Reason first, not source: an index led by source_id alone would also serve DeleteDeadLetters' per-item
-- probe, which takes a new source for one row and then picks the smaller index over the item key, reading
-- every dead letter of the source for each item of a page (decision 82; tests/sync/test_identity_probe_plans.py).
-- transaction:false: the runner sends each statement on its own (CONCURRENTLY refuses a transaction);
-- CONCURRENTLY takes only a SHARE UPDATE EXCLUSIVE lock, so runs keep parking and clearing items meanwhile.
set lock_timeout = '5s';
set statement_timeout = '30min';
-- squawk assumes a transaction (.squawk.toml); a transaction:false file runs outside one.
-- squawk-ignore ban-concurrent-index-creation-in-transaction
create index concurrently dead_letters_reason_source_idx on dead_letters (reason, source_id, id);

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
