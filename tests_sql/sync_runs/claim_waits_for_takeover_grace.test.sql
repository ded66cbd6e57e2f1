-- ClaimRun (sql/queries/runs.sql) takes a running run over only once its heartbeat has been stale for
-- stale_after + grace seconds, and every claim starts a new lease generation (deliveries + 1).
begin;
select plan(5);

-- Setup
insert into sources (name, connector_type) values ('Leased', 'jira') returning id as source_id \gset
insert into sync_runs (source_id, mode, trigger) values (:source_id, 'full', 'manual') returning id as run_id \gset

-- Test
select results_eq(
    format($$select deliveries from tap_queries.claim_run(%s, 'w1', 120, 30)$$, :run_id),
    $$values (1)$$,
    'Claiming a queued run makes generation 1.');
update sync_runs set heartbeat_at = now() - interval '130 seconds' where id = :run_id;
select is_empty(
    format($$select * from tap_queries.claim_run(%s, 'w2', 120, 30)$$, :run_id),
    'A run stale for 130 s is not taken over while the 30 s grace after stale_run_after (120 s) lasts.');
select is((select worker_id from sync_runs where id = :run_id), 'w1',
    'The refused takeover left the holder in place.');
update sync_runs set heartbeat_at = now() - interval '151 seconds' where id = :run_id;
select results_eq(
    format($$select deliveries from tap_queries.claim_run(%s, 'w2', 120, 30)$$, :run_id),
    $$values (2)$$,
    'Once stale for longer than stale_run_after + grace the run is taken over as generation 2.');
select is((select worker_id from sync_runs where id = :run_id), 'w2',
    'The new holder is recorded on the run.');

select * from finish();
rollback;
