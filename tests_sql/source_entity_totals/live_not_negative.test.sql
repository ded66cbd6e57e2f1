-- No source has fewer than zero live entities (source_entity_totals_live_not_negative).
begin;
select plan(2);

-- Setup
insert into sources (name, connector_type) values ('Jira', 'jira') returning id as source_id \gset

-- Test
select lives_ok(format('insert into source_entity_totals values (%s, 0)', :source_id), 'Zero live entities are accepted.');
select throws_ok(format('update source_entity_totals set live = -1 where source_id = %s', :source_id),
    '23514', 'new row for relation "source_entity_totals" violates check constraint "source_entity_totals_live_not_negative"',
    'A negative count is rejected by source_entity_totals_live_not_negative.');

select * from finish();
rollback;
