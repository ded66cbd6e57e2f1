-- Structure of webhook_delivery_totals: remembered webhook deliveries per source, in slots by backend, for
-- GET /metrics (decision 90).
begin;
select plan(17);

-- Test
select has_table('public', 'webhook_delivery_totals', 'Table webhook_delivery_totals exists.');
select is((select relpersistence::text from pg_class where oid = 'public.webhook_delivery_totals'::regclass), 'u',
    'Table webhook_delivery_totals is unlogged, as webhook_deliveries: a crash empties both, so they still agree.');
select columns_are('public', 'webhook_delivery_totals', array['source_id', 'slot', 'deliveries'],
    'Table webhook_delivery_totals has exactly the expected columns.');
select col_type_is('public', 'webhook_delivery_totals', 'source_id', 'bigint', 'Column webhook_delivery_totals.source_id is bigint.');
select col_type_is('public', 'webhook_delivery_totals', 'slot', 'integer', 'Column webhook_delivery_totals.slot is integer.');
select col_type_is('public', 'webhook_delivery_totals', 'deliveries', 'bigint', 'Column webhook_delivery_totals.deliveries is bigint.');
select col_not_null('public', 'webhook_delivery_totals', 'source_id', 'Column webhook_delivery_totals.source_id is NOT NULL.');
select col_not_null('public', 'webhook_delivery_totals', 'slot', 'Column webhook_delivery_totals.slot is NOT NULL.');
select col_not_null('public', 'webhook_delivery_totals', 'deliveries', 'Column webhook_delivery_totals.deliveries is NOT NULL.');
select col_is_pk('public', 'webhook_delivery_totals', array['source_id', 'slot'],
    'The primary key of webhook_delivery_totals is (source_id, slot).');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.webhook_delivery_totals'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('webhook_delivery_totals_pkey', 'p'), ('webhook_delivery_totals_slot_range', 'c')$$,
    'Table webhook_delivery_totals has exactly the expected named constraints (no foreign key, as on webhook_deliveries).');
select indexes_are('public', 'webhook_delivery_totals', array['webhook_delivery_totals_pkey'],
    'Table webhook_delivery_totals has exactly the expected indexes.');
select triggers_are('public', 'webhook_delivery_totals', array[]::name[], 'Table webhook_delivery_totals has no triggers of its own.');
select throws_ok($$insert into webhook_delivery_totals values (1, 16, 1)$$, '23514', null,
    'A slot outside 0..15 is refused (the triggers write pg_backend_pid() % 16).');
select lives_ok($$insert into webhook_delivery_totals values (1, 15, -3)$$,
    'A slot may hold a negative figure (the prune takes out of its own slot what others added).');
select table_privs_are('public', 'webhook_delivery_totals', 'harvester_worker', array['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    'The worker role writes webhook_delivery_totals (the triggers run as the role that prunes deliveries).');
select table_privs_are('public', 'webhook_delivery_totals', 'harvester_api', array['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    'The API role writes webhook_delivery_totals (the triggers run as the role that records deliveries).');

select * from finish();
rollback;
