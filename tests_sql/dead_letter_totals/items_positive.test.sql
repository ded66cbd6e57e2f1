-- A reason without items has no row (dead_letter_totals_items_positive).
begin;
select plan(3);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset

-- Test
select lives_ok(format('insert into dead_letter_totals values (%s, %L, 1)', :source_id, 'malformed'),
    'One item is accepted.');
select throws_ok(format('update dead_letter_totals set items = 0 where source_id = %s', :source_id),
    '23514', 'new row for relation "dead_letter_totals" violates check constraint "dead_letter_totals_items_positive"',
    'Zero items are rejected by dead_letter_totals_items_positive: the row goes instead.');
select throws_ok(format('update dead_letter_totals set items = -1 where source_id = %s', :source_id),
    '23514', 'new row for relation "dead_letter_totals" violates check constraint "dead_letter_totals_items_positive"',
    'A negative count is rejected by dead_letter_totals_items_positive.');

select * from finish();
rollback;
