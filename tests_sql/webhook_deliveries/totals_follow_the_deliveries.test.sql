-- The _850_webhook_delivery_totals_* triggers keep webhook_delivery_totals equal to what webhook_deliveries
-- holds through every kind of change: the API's RecordDelivery (a new delivery, the same one again, one
-- seen again after it expired), the prune job's PruneDeliveries, statements of many rows, a move between
-- sources and a truncate (decision 90). A source's figure is the sum of its slots; the expectation is
-- counted straight from webhook_deliveries.
begin;
select plan(15);

-- Setup
create temp view expected as
select source_id, count(*)::bigint as deliveries from webhook_deliveries group by source_id;
create temp view kept as
select source_id, sum(deliveries)::bigint as deliveries from webhook_delivery_totals
group by source_id having sum(deliveries) <> 0;

-- Test
select trigger_is('webhook_deliveries', '_850_webhook_delivery_totals_insert', 'tg_webhook_deliveries__totals',
    'Inserts of deliveries run tg_webhook_deliveries__totals.');
select trigger_is('webhook_deliveries', '_850_webhook_delivery_totals_update', 'tg_webhook_deliveries__totals',
    'Updates of deliveries run tg_webhook_deliveries__totals.');
select trigger_is('webhook_deliveries', '_850_webhook_delivery_totals_delete', 'tg_webhook_deliveries__totals',
    'Deletes of deliveries run tg_webhook_deliveries__totals.');
select trigger_is('webhook_deliveries', '_850_webhook_delivery_totals_truncate', 'tg_webhook_deliveries__totals_truncate',
    'A truncate of deliveries runs tg_webhook_deliveries__totals_truncate.');

select is(tap_queries.record_delivery(101, 'd-1'), 'd-1', 'A new delivery is recorded ...');
select tap_queries.record_delivery(101, 'd-2');
select tap_queries.record_delivery(202, 'd-1');
select set_eq('select * from kept', 'select * from expected', '... and counted in, per source.');
select is((select array_agg(distinct slot) from webhook_delivery_totals), array[pg_backend_pid() % 16],
    'This session''s deliveries are counted in its own slot.');

create temp table before_repeat as select ctid::text as at, * from webhook_delivery_totals;
select is(tap_queries.record_delivery(101, 'd-1'), null, 'The same delivery again is not recorded ...');
select set_eq($$select ctid::text as at, * from webhook_delivery_totals$$, $$select * from before_repeat$$,
    '... and the totals are not written at all.');

update webhook_deliveries set expires_at = now() - interval '1 second' where delivery_id = 'd-2';
create temp table before_expired as select ctid::text as at, * from webhook_delivery_totals;
select is(tap_queries.record_delivery(101, 'd-2'), 'd-2', 'A delivery seen again after it expired is taken again ...');
select set_eq($$select ctid::text as at, * from webhook_delivery_totals$$, $$select * from before_expired$$,
    '... and, still one row, the totals are not written at all.');

insert into webhook_deliveries (source_id, delivery_id, expires_at)
select (array[101, 202, 303])[1 + g % 3], 'bulk-' || g, now() + case when g % 4 = 0 then interval '-1 hour' else interval '1 hour' end
from generate_series(1, 600) g;
select tap_queries.prune_deliveries();
select set_eq('select * from kept', 'select * from expected',
    'Hundreds recorded in one statement, then the expired ones pruned in one: the sums follow.');

update webhook_deliveries set source_id = 202 where source_id = 303 and delivery_id like 'bulk-1%';
select set_eq('select * from kept', 'select * from expected', 'Deliveries moved to another source are counted there.');

update webhook_delivery_totals set slot = (slot + 1) % 16;
insert into webhook_deliveries (source_id, delivery_id, expires_at) values (101, 'late', now() + interval '1 hour');
delete from webhook_deliveries where source_id = 303;
select set_eq('select * from kept', 'select * from expected',
    'What another session added is taken out from this one''s slot: the slots of a source add up.');

truncate webhook_deliveries;
select is((select count(*)::integer from webhook_delivery_totals), 0, 'A truncate leaves no totals.');

select * from finish();
rollback;
