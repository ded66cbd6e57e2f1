-- sync_runs.state takes exactly queued | running | succeeded | failed | cancelled (seed 000 §2).
begin;
select plan(6);

-- Setup
-- Two sources, because each may hold only one queued or running run.
insert into sources (name, connector_type) values ('Queued', 'jira') returning id as queued_source \gset
insert into sources (name, connector_type) values ('Running', 'jira') returning id as running_source \gset

-- Test
select lives_ok(
    format($$insert into sync_runs (source_id, mode, trigger, state) values (%s, 'full', 'connect', 'queued')$$, :queued_source),
    'A queued run is accepted.');
select lives_ok(
    format($$insert into sync_runs (source_id, mode, trigger, state, started_at) values (%s, 'full', 'connect', 'running', now())$$, :running_source),
    'A running run is accepted.');
select lives_ok(
    format($$insert into sync_runs (source_id, mode, trigger, state, finished_at) values (%s, 'full', 'connect', 'succeeded', now())$$, :queued_source),
    'A succeeded run is accepted.');
select lives_ok(
    format($$insert into sync_runs (source_id, mode, trigger, state, finished_at) values (%s, 'full', 'connect', 'failed', now())$$, :queued_source),
    'A failed run is accepted.');
select lives_ok(
    format($$insert into sync_runs (source_id, mode, trigger, state, finished_at) values (%s, 'full', 'connect', 'cancelled', now())$$, :queued_source),
    'A cancelled run is accepted.');
select throws_ok(
    format($$insert into sync_runs (source_id, mode, trigger, state) values (%s, 'full', 'connect', 'done')$$, :running_source),
    '23514', 'new row for relation "sync_runs" violates check constraint "sync_runs_state_check"',
    'An unknown run state is rejected by sync_runs_state_check.');

select * from finish();
rollback;
