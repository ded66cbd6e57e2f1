-- The _600_run_totals_* triggers keep sync_run_totals equal to the finished runs' sums through every kind of
-- change: a run that finishes, one inserted already finished, an edit of a finished run, a deletion, a
-- source's deletion and a truncate (decision 83). The expectation is computed straight from sync_runs, with
-- the histogram bucket found another way (the first bound the duration does not exceed).
begin;
select plan(23);

-- Setup
create temp view expected_totals as
select r.source_id, r.mode, r.state,
       coalesce((select min(u.o) from unnest(harvester_run_duration_bounds()) with ordinality as u(b, o)
                 where d.seconds <= u.b), cardinality(harvester_run_duration_bounds()) + 1)::integer as bucket,
       count(*)::bigint as runs, (count(*) filter (where r.trigger = 'webhook'))::bigint as webhook_runs,
       sum(coalesce(r.entities_done, 0))::bigint as entities_done, sum(r.api_calls)::bigint as api_calls,
       sum(r.rate_limited)::bigint as rate_limited, sum(d.seconds::numeric) as duration_sum
from sync_runs r
cross join lateral (select greatest(extract(epoch from r.finished_at - coalesce(r.started_at, r.created_at))::float8, 0)
                    as seconds) d
where r.state in ('succeeded', 'failed', 'cancelled')
group by 1, 2, 3, 4;
create temp view kept_totals as select * from sync_run_totals where runs > 0;

insert into sources (name, connector_type) values ('Jira', 'jira') returning id as jira \gset
insert into sources (name, connector_type) values ('Slack', 'slack') returning id as slack \gset

-- Test
select trigger_is('sync_runs', '_600_run_totals_insert', 'tg_sync_runs__totals', 'Inserts of sync_runs run tg_sync_runs__totals.');
select trigger_is('sync_runs', '_600_run_totals_update', 'tg_sync_runs__totals', 'Updates of sync_runs run tg_sync_runs__totals.');
select trigger_is('sync_runs', '_600_run_totals_delete', 'tg_sync_runs__totals', 'Deletes of sync_runs run tg_sync_runs__totals.');
select trigger_is('sync_runs', '_600_run_totals_truncate', 'tg_sync_runs__totals_truncate',
    'A truncate of sync_runs runs tg_sync_runs__totals_truncate.');
insert into sync_runs (source_id, mode, trigger, created_at) values (:jira, 'full', 'manual', '2026-12-01 10:00:00+00')
    returning id as run_a \gset
select is((select count(*)::integer from sync_run_totals), 0, 'A queued run is not in the totals.');
update sync_runs set state = 'running', started_at = '2026-12-01 10:00:10+00', entities_done = 40, api_calls = 4 where id = :run_a;
select is((select count(*)::integer from sync_run_totals), 0, 'A running run is not in the totals.');
update sync_runs set state = 'succeeded', finished_at = '2026-12-01 10:00:13+00', entities_done = 100, api_calls = 9,
    rate_limited = 1 where id = :run_a;
select set_eq('select * from kept_totals', 'select * from expected_totals', 'A run that finishes is added.');
select is((select bucket from sync_run_totals where source_id = :jira and mode = 'full' and state = 'succeeded'), 2::integer,
    'Its 3 seconds fall in the second bucket (above 1, at most 5).');

insert into sync_runs (source_id, mode, trigger, state, created_at, started_at, finished_at, api_calls)
values (:jira, 'incremental', 'webhook', 'failed', '2026-12-01 11:00:00+00', '2026-12-01 11:00:00+00', '2026-12-01 11:00:05+00', 2),
       (:jira, 'incremental', 'schedule', 'failed', '2026-12-01 12:00:00+00', '2026-12-01 12:00:09+00', '2026-12-01 12:00:01+00', 0),
       (:jira, 'incremental', 'schedule', 'failed', '2026-12-01 13:00:00+00', null, '2026-12-01 21:20:00+00', 0),
       (:slack, 'reconciliation', 'schedule', 'cancelled', '2026-12-01 09:00:00+00', null, '2026-12-01 09:00:01+00', 0);
select set_eq('select * from kept_totals', 'select * from expected_totals',
    'Runs inserted already finished are added (webhook, negative, unstarted and very long ones).');
select is((select array_agg(bucket order by bucket) from sync_run_totals
            where source_id = :jira and mode = 'incremental' and state = 'failed'),
    array[1, 2, 13]::integer[],
    'Exactly 5 s counts at most 5 (bucket 2), an end before the start counts as 0 s (bucket 1), 8 h 20 min is past every bound.');
select is((select sum(webhook_runs)::bigint from sync_run_totals where source_id = :jira and mode = 'incremental' and state = 'failed'), 1::bigint,
    'The webhook-triggered run is counted as one.');

update sync_runs set api_calls = 50, entities_done = 7 where id = :run_a;
select set_eq('select * from kept_totals', 'select * from expected_totals', 'An edit of a finished run''s counters is followed.');
update sync_runs set finished_at = '2026-12-01 10:20:00+00' where id = :run_a;
select set_eq('select * from kept_totals', 'select * from expected_totals', 'An edit of its end moves it to another bucket.');
update sync_runs set state = 'failed' where id = :run_a;
select set_eq('select * from kept_totals', 'select * from expected_totals', 'A change of its final state moves it between rows.');
update sync_runs set mode = 'reconciliation', trigger = 'webhook' where id = :run_a;
select set_eq('select * from kept_totals', 'select * from expected_totals', 'A change of its mode and trigger moves it too.');

insert into sync_runs (source_id, mode, trigger, state, created_at) values (:slack, 'full', 'manual', 'running', '2026-12-01 14:00:00+00')
    returning id as run_b \gset
update sync_runs set entities_done = 500, api_calls = 12 where id = :run_b;
select set_eq('select * from kept_totals', 'select * from expected_totals', 'A running run''s progress changes nothing.');
update sync_runs set state = 'cancelled', finished_at = '2026-12-01 14:01:00+00' where id = :run_b;
select set_eq('select * from kept_totals', 'select * from expected_totals', 'A cancelled run is added.');

delete from sync_runs where id = :run_a;
select set_eq('select * from kept_totals', 'select * from expected_totals', 'A deleted run is taken out.');
select is((select sum(runs)::bigint from sync_run_totals where source_id = :jira and mode = 'reconciliation' and state = 'failed'), 0::bigint,
    'Its row stays, at zero, and readers skip it.');

insert into sync_runs (source_id, mode, trigger, state, created_at, started_at, finished_at, entities_done, api_calls)
select :slack, (array['full', 'incremental', 'reconciliation'])[1 + g % 3], (array['webhook', 'schedule'])[1 + g % 2],
       (array['succeeded', 'failed', 'cancelled'])[1 + g % 3 / 2], '2026-11-01', '2026-11-01',
       timestamptz '2026-11-01' + make_interval(secs => (g * 37) % 30000), g % 50, g % 9
from generate_series(1, 500) g;
select set_eq('select * from kept_totals', 'select * from expected_totals', 'One statement inserting 500 finished runs is summed.');
update sync_runs set api_calls = api_calls + 1, finished_at = finished_at + interval '1 minute',
    state = case when id % 2 = 0 then 'failed' else state end
where source_id = :slack and created_at = '2026-11-01';
select set_eq('select * from kept_totals', 'select * from expected_totals', 'One statement editing them is followed.');

delete from sources where id = :slack;
select is((select count(*)::integer from sync_run_totals where source_id = :slack), 0, 'A deleted source takes its totals along.');

set local client_min_messages = warning;  -- the cascade's notices
truncate sync_runs cascade;
select is((select count(*)::integer from sync_run_totals), 0, 'A truncated journal leaves no totals.');

select * from finish();
rollback;
