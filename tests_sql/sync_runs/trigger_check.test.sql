-- sync_runs.trigger takes exactly connect | schedule | webhook | watchdog | manual (seed 000 §2).
begin;
select plan(6);

-- Setup
insert into sources (name, connector_type) values ('Runs', 'jira') returning id as source_id \gset

-- Test
select lives_ok(
    format($$insert into sync_runs (source_id, mode, trigger, state, finished_at) values (%s, 'full', 'connect', 'succeeded', now())$$, :source_id),
    'A run raised by connecting the source is accepted.');
select lives_ok(
    format($$insert into sync_runs (source_id, mode, trigger, state, finished_at) values (%s, 'incremental', 'schedule', 'succeeded', now())$$, :source_id),
    'A run raised by the schedule is accepted.');
select lives_ok(
    format($$insert into sync_runs (source_id, mode, trigger, state, finished_at) values (%s, 'incremental', 'webhook', 'succeeded', now())$$, :source_id),
    'A run raised by a webhook is accepted.');
select lives_ok(
    format($$insert into sync_runs (source_id, mode, trigger, state, finished_at) values (%s, 'incremental', 'watchdog', 'succeeded', now())$$, :source_id),
    'A run raised by the webhook watchdog is accepted.');
select lives_ok(
    format($$insert into sync_runs (source_id, mode, trigger, state, finished_at) values (%s, 'incremental', 'manual', 'succeeded', now())$$, :source_id),
    'A run raised manually by an admin is accepted.');
select throws_ok(
    format($$insert into sync_runs (source_id, mode, trigger, state, finished_at) values (%s, 'incremental', 'cron', 'succeeded', now())$$, :source_id),
    '23514', 'new row for relation "sync_runs" violates check constraint "sync_runs_trigger_check"',
    'An unknown trigger is rejected by sync_runs_trigger_check.');

select * from finish();
rollback;
