-- migrate:up transaction:false
-- GET /sources/{id}/dead-letters (ListDeadLetters, ListDeadLettersOfReason) pages a source's queue oldest
-- first, keyset on id. No index held a source's items in id order, so a plan walked the queue through the
-- primary key and dropped every other source's (and reason's) items. The case that matters is a storm: a
-- source whose payloads changed shape parks every item as `malformed`, and the operator then asks for the
-- items that failed for another reason, or for another source's queue parked after the storm. With
-- 1,000,000 malformed items in one source, a page of its `permission` items (none) took 93 ms and a page
-- of another source's `not_found` items 147 ms, ten times that at 10,000,000; once the statement is
-- prepared and PostgreSQL keeps a generic plan, even a plain page of the other source read the whole
-- storm (decision 87). Two indexes hold each source's items in the pages' order, one per reason:
-- - dead_letters_source_id_idx (source_id, id): a source's pages, with or without a source type;
-- - dead_letters_source_reason_idx (source_id, reason, id): a source's pages of one reason.
-- A page then reads its own entries (under 1 ms at 1,000,000). The queue is written a page at a time
-- by runs, and only for failing items: two more index entries per parked item.
-- transaction:false: the runner sends each statement on its own (CONCURRENTLY refuses a transaction);
-- CONCURRENTLY takes only a SHARE UPDATE EXCLUSIVE lock, so runs keep parking and clearing items meanwhile.
set lock_timeout = '5s';
set statement_timeout = '30min';
-- squawk assumes a transaction (.squawk.toml); a transaction:false file runs outside one.
-- squawk-ignore ban-concurrent-index-creation-in-transaction
create index concurrently dead_letters_source_id_idx on dead_letters (source_id, id);
-- squawk-ignore ban-concurrent-index-creation-in-transaction
create index concurrently dead_letters_source_reason_idx on dead_letters (source_id, reason, id);

-- migrate:down
-- Forward-only: landed migrations are never reverted; write a new migration instead.
