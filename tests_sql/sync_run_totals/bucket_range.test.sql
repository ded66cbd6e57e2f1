-- A totals row's bucket is one of harvester_run_duration_bounds()' buckets, or the one past the last bound.
begin;
select plan(3);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset

-- Test
select lives_ok(
    format($$insert into sync_run_totals values (%s, 'full', 'succeeded', cardinality(harvester_run_duration_bounds()) + 1, 1, 0, 0, 0, 0, 90000)$$, :source_id),
    'The bucket past the last bound is accepted.');
select throws_ok(
    format($$insert into sync_run_totals values (%s, 'full', 'failed', cardinality(harvester_run_duration_bounds()) + 2, 1, 0, 0, 0, 0, 2)$$, :source_id),
    '23514', 'new row for relation "sync_run_totals" violates check constraint "sync_run_totals_bucket_range"',
    'A bucket beyond it is rejected by sync_run_totals_bucket_range.');
select throws_ok(
    format($$insert into sync_run_totals values (%s, 'full', 'failed', 0, 1, 0, 0, 0, 0, 2)$$, :source_id),
    '23514', 'new row for relation "sync_run_totals" violates check constraint "sync_run_totals_bucket_range"',
    'Bucket 0 is rejected by sync_run_totals_bucket_range.');

select * from finish();
rollback;
