-- The pending set through the statements the API and apply_webhook run (decision 145): an item named by
-- many deliveries is pending once and keeps its place; a run takes the oldest first, at most its share,
-- and a rolled-back take leaves them pending; empty names are refused; a deleted source takes its items.
begin;
select plan(12);

-- Setup
insert into sources (name, connector_type, base_url) values ('hooked', 'jira', 'http://127.0.0.1:1'),
    ('other', 'jira', 'http://127.0.0.1:1');
create temp table ids as select (select id from sources where name = 'hooked') as hooked,
                                (select id from sources where name = 'other') as other;
create temp view pending as
select source_type, source_entity_id from webhook_pending where source_id = (select hooked from ids);

-- Test
select tap_queries.add_webhook_pending((select hooked from ids),
    '[{"source_type": "ticket", "source_entity_id": "3"}, {"source_type": "ticket", "source_entity_id": "1"}]'::jsonb);
select set_eq('select * from pending', $$values ('ticket', '1'), ('ticket', '3')$$, 'A delivery''s items are added ...');
update webhook_pending set received_at = now() - interval '1 minute';
select tap_queries.add_webhook_pending((select hooked from ids),
    '[{"source_type": "ticket", "source_entity_id": "1"}, {"source_type": "ticket", "source_entity_id": "2"}]'::jsonb);
select is((select count(*)::integer from pending), 3, '... an item already pending is not added again ...');
select is((select received_at from webhook_pending where source_entity_id = '1'), now() - interval '1 minute',
    '... and keeps its place (the first delivery''s time).');
select tap_queries.add_webhook_pending((select other from ids), '[{"source_type": "ticket", "source_entity_id": "9"}]'::jsonb);
select set_eq('select * from pending', $$values ('ticket', '1'), ('ticket', '2'), ('ticket', '3')$$,
    'Each source has its own set.');

savepoint before_take;
select results_eq($$select * from tap_queries.take_webhook_pending((select hooked from ids), 2)$$,
    $$values ('ticket'::text, '1'::text), ('ticket', '3')$$,
    'A take returns the oldest items first, at most max_items ...');
select set_eq('select * from pending', $$values ('ticket', '2')$$, '... and removes them from the set.');
rollback to savepoint before_take;
select set_eq('select * from pending', $$values ('ticket', '1'), ('ticket', '2'), ('ticket', '3')$$,
    'A take rolled back (the run could not start) leaves the items pending.');

select is(tap_queries.webhook_pending_exists((select hooked from ids)), true, 'The source has items pending.');
select tap_queries.drop_webhook_pending((select hooked from ids));
select is(tap_queries.webhook_pending_exists((select hooked from ids)), false, 'Dropping a source''s set removes its items ...');
select is(tap_queries.webhook_pending_exists((select other from ids)), true, '... and no other source''s.');

select throws_ok($$select tap_queries.add_webhook_pending((select hooked from ids),
    '[{"source_type": "ticket", "source_entity_id": ""}]'::jsonb)$$, '23514', null,
    'An empty item id is refused.');
delete from sources where id = (select other from ids);
select is((select count(*)::integer from webhook_pending), 0, 'A deleted source takes its pending items.');

select * from finish();
rollback;
