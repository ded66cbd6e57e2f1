-- Structure of webhook_deliveries: unlogged webhook delivery-id dedupe with a TTL.
begin;
select plan(16);

-- Test
select has_table('public', 'webhook_deliveries', 'Table webhook_deliveries exists.');
select is((select relpersistence::text from pg_class where oid = 'public.webhook_deliveries'::regclass), 'u',
    'Table webhook_deliveries is unlogged: its contents are ephemeral by design.');
select columns_are('public', 'webhook_deliveries', array['source_id', 'delivery_id', 'received_at', 'expires_at'],
    'Table webhook_deliveries has exactly the expected columns.');
select col_type_is('public', 'webhook_deliveries', 'source_id', 'bigint', 'Column webhook_deliveries.source_id is bigint.');
select col_not_null('public', 'webhook_deliveries', 'source_id', 'Column webhook_deliveries.source_id is NOT NULL.');
select col_type_is('public', 'webhook_deliveries', 'delivery_id', 'text', 'Column webhook_deliveries.delivery_id is text.');
select col_not_null('public', 'webhook_deliveries', 'delivery_id', 'Column webhook_deliveries.delivery_id is NOT NULL.');
select col_type_is('public', 'webhook_deliveries', 'received_at', 'timestamp with time zone', 'Column webhook_deliveries.received_at is timestamp with time zone.');
select col_not_null('public', 'webhook_deliveries', 'received_at', 'Column webhook_deliveries.received_at is NOT NULL.');
select col_default_is('public', 'webhook_deliveries', 'received_at', 'now()'::text, 'Column webhook_deliveries.received_at defaults to now().');
select col_type_is('public', 'webhook_deliveries', 'expires_at', 'timestamp with time zone', 'Column webhook_deliveries.expires_at is timestamp with time zone.');
select col_not_null('public', 'webhook_deliveries', 'expires_at', 'Column webhook_deliveries.expires_at is NOT NULL.');
select has_pk('public', 'webhook_deliveries', 'Table webhook_deliveries has a primary key.');
select col_is_pk('public', 'webhook_deliveries', array['source_id', 'delivery_id'], 'The primary key of webhook_deliveries is (source_id, delivery_id).');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.webhook_deliveries'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('webhook_deliveries_pkey', 'p')$$,
    'Table webhook_deliveries has exactly the expected named constraints.');
select indexes_are('public', 'webhook_deliveries', array['webhook_deliveries_expires_at_idx', 'webhook_deliveries_pkey'], 'Table webhook_deliveries has exactly the expected indexes.');

select * from finish();
rollback;
