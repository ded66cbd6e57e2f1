-- harvester_webhook_job_waiting(source_id) tells whether a todo apply_webhook job for the source exists: it
-- will take whatever the source has pending (decision 145). A job being done may have taken the set
-- already, and an ended job takes nothing, so neither counts; nor does another source's job or another task.
-- LockWebhookPending holds a transaction-scoped advisory lock on the source's set.
begin;
select plan(7);

-- Setup
insert into procrastinate_jobs (queue_name, task_name, args, status) values
    ('sync', 'harvester:apply_webhook', '{"source_id": 101}', 'todo'),
    ('sync', 'harvester:apply_webhook', '{"source_id": 202}', 'doing'),
    ('sync', 'harvester:apply_webhook', '{"source_id": 303}', 'succeeded'),
    ('sync', 'harvester:run_sync', '{"source_id": 404, "run_id": 1}', 'todo'),
    ('sync', 'harvester:apply_webhook', '{"source_id": 505, "upserts": [["ticket", "1"]], "deletes": []}', 'todo');

-- Test
select is(harvester_webhook_job_waiting(101), true, 'A todo job for the source waits to take its set.');
select is(harvester_webhook_job_waiting(202), false, 'A job being done may have taken the set already: it does not count.');
select is(harvester_webhook_job_waiting(303), false, 'An ended job does not count.');
select is(harvester_webhook_job_waiting(404), false, 'Another task''s job does not count.');
select is(harvester_webhook_job_waiting(999), false, 'No job for the source: none waits.');
select is(harvester_webhook_job_waiting(505), true, 'A todo job deferred before migration 43 (its items in its arguments) waits too.');

select tap_queries.lock_webhook_pending(1213618000, 101);
select is((select count(*)::integer from pg_locks
           where locktype = 'advisory' and pid = pg_backend_pid() and classid = 1213618000 and objid = 101 and objsubid = 2),
    1, 'LockWebhookPending holds the set''s advisory lock (class, source id) until the transaction ends.');

select * from finish();
rollback;
