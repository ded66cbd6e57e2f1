-- The fenced lease (sql/queries/runs.sql): after a takeover, every write of the old holder (generation 1)
-- matches nothing, even when it reuses the same worker id, while the new holder's writes go through.
begin;
select plan(8);

-- Setup
insert into sources (name, connector_type) values ('Fenced', 'jira') returning id as source_id \gset
insert into sync_runs (source_id, mode, trigger) values (:source_id, 'reconciliation', 'manual')
    returning id as run_id \gset
select deliveries from tap_queries.claim_run(:run_id, 'host:1:a', 120, 30);
update sync_runs set heartbeat_at = now() - interval '1 hour' where id = :run_id;
-- The same process name: only the generation tells the two executions apart.
select deliveries from tap_queries.claim_run(:run_id, 'host:1:a', 120, 30);

-- Test
select is_empty(
    format($$select * from tap_queries.hold_run_lease(%s, 1, 'host:1:a')$$, :run_id),
    'HoldRunLease refuses the generation that was taken over, so its unit of work aborts.');
select isnt_empty(
    format($$select * from tap_queries.hold_run_lease(%s, 2, 'host:1:a')$$, :run_id),
    'HoldRunLease grants the current generation.');
select tap_queries.save_progress(:run_id, 1, 'host:1:a', '{"enumerated": 999}', 999, 999, 0, 0, 0);
select is((select entities_done from sync_runs where id = :run_id), null::integer,
    'SaveProgress of the old generation counts nothing.');
select tap_queries.save_progress(:run_id, 2, 'host:1:a', '{"enumerated": 50}', 50, 100, 0, 3, 0);
select is((select entities_done from sync_runs where id = :run_id), 50,
    'SaveProgress of the current generation records its page.');
update sync_runs set heartbeat_at = '2000-01-01' where id = :run_id;
select tap_queries.heartbeat(:run_id, 1, 'host:1:a');
select is((select heartbeat_at from sync_runs where id = :run_id), '2000-01-01'::timestamptz,
    'A heartbeat of the old generation does not keep the run alive.');
select tap_queries.finish_run(:run_id, 1, 'host:1:a', 'succeeded', null, 999, 999, 0, 0, 0);
select is((select state from sync_runs where id = :run_id), 'running',
    'FinishRun of the old generation does not end the run.');
select tap_queries.release_run_lease(:run_id, 2, 'host:1:a');
select is((select heartbeat_at from sync_runs where id = :run_id), 'epoch'::timestamptz,
    'ReleaseRunLease by the holder makes the run claimable at once.');
select tap_queries.finish_run(:run_id, 2, 'host:1:a', 'succeeded', null, 100, 100, 0, 3, 0);
select is((select (state, entities_done) from sync_runs where id = :run_id), row('succeeded'::text, 100),
    'FinishRun of the current generation ends the run with its counters.');

select * from finish();
rollback;
