-- harvester_run_duration_bucket puts a duration in the first bucket whose bound it does not exceed
-- (Prometheus "le"), and past every bound in the last one.
begin;
select plan(6);

-- Test
select is(harvester_run_duration_bucket(0), 1::integer, '0 s is in the first bucket.');
select is(harvester_run_duration_bucket(1), 1::integer, 'Exactly the first bound (1 s) is in the first bucket.');
select is(harvester_run_duration_bucket(1.000001), 2::integer, 'Just past it is in the second.');
select is(harvester_run_duration_bucket(5), 2::integer, 'Exactly 5 s is in the second bucket (le 5).');
select is(harvester_run_duration_bucket((harvester_run_duration_bounds())[cardinality(harvester_run_duration_bounds())]),
    cardinality(harvester_run_duration_bounds())::integer, 'Exactly the last bound is in the last bound''s bucket.');
select is(harvester_run_duration_bucket(1e9), (cardinality(harvester_run_duration_bounds()) + 1)::integer,
    'Past every bound is in the bucket after the last bound.');

select * from finish();
rollback;
