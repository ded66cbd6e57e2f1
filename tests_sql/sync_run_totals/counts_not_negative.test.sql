-- No total is ever negative (sync_run_totals_counts_not_negative): a run taken out twice fails loudly.
begin;
select plan(2);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset

-- Test
select lives_ok(
    format($$insert into sync_run_totals values (%s, 'full', 'succeeded', 1, 0, 0, 0, 0, 0, 0)$$, :source_id),
    'Zero totals are accepted.');
select throws_ok(
    format($$insert into sync_run_totals values (%s, 'full', 'failed', 1, -1, 0, 0, 0, 0, 0)$$, :source_id),
    '23514', 'new row for relation "sync_run_totals" violates check constraint "sync_run_totals_counts_not_negative"',
    'A negative run count is rejected by sync_run_totals_counts_not_negative.');

select * from finish();
rollback;
