-- The run-duration histogram's bounds are positive and strictly ascending (Prometheus "le" buckets).
begin;
select plan(3);

-- Test
select has_function('public', 'harvester_run_duration_bounds', array[]::name[], 'harvester_run_duration_bounds() exists.');
select is((select bool_and(b > 0) from unnest(harvester_run_duration_bounds()) as b), true, 'Every bound is positive.');
select is(
    (select bool_and(b > lag_b) from (select b, lag(b) over (order by o) as lag_b
                                      from unnest(harvester_run_duration_bounds()) with ordinality as u(b, o)) x
      where lag_b is not null),
    true, 'The bounds ascend strictly.');

select * from finish();
rollback;
