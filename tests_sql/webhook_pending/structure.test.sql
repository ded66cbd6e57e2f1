-- Structure of webhook_pending: the items accepted webhook deliveries announced and no run has taken yet,
-- one row per item (migration 43, decision 145).
begin;
select plan(19);

-- Test
select has_table('public', 'webhook_pending', 'Table webhook_pending exists.');
select is((select relpersistence::text from pg_class where oid = 'public.webhook_pending'::regclass), 'p',
    'Table webhook_pending is logged: an announced change survives a crash, unlike the dedupe window.');
select columns_are('public', 'webhook_pending', array['source_id', 'source_type', 'source_entity_id', 'received_at'],
    'Table webhook_pending has exactly the expected columns.');
select col_type_is('public', 'webhook_pending', 'source_id', 'bigint', 'Column webhook_pending.source_id is bigint.');
select col_not_null('public', 'webhook_pending', 'source_id', 'Column webhook_pending.source_id is NOT NULL.');
select col_type_is('public', 'webhook_pending', 'source_type', 'text', 'Column webhook_pending.source_type is text.');
select col_not_null('public', 'webhook_pending', 'source_type', 'Column webhook_pending.source_type is NOT NULL.');
select col_type_is('public', 'webhook_pending', 'source_entity_id', 'text', 'Column webhook_pending.source_entity_id is text.');
select col_not_null('public', 'webhook_pending', 'source_entity_id', 'Column webhook_pending.source_entity_id is NOT NULL.');
select col_type_is('public', 'webhook_pending', 'received_at', 'timestamp with time zone',
    'Column webhook_pending.received_at is timestamp with time zone.');
select col_default_is('public', 'webhook_pending', 'received_at', 'now()'::text, 'Column webhook_pending.received_at defaults to now().');
select col_is_pk('public', 'webhook_pending', array['source_id', 'source_type', 'source_entity_id'],
    'The primary key of webhook_pending is (source_id, source_type, source_entity_id): an item is pending once.');
select fk_ok('public', 'webhook_pending', array['source_id'], 'public', 'sources', array['id'],
    'webhook_pending.(source_id) references sources.(id).');
select is((select confdeltype::text from pg_constraint
           where conrelid = 'public.webhook_pending'::regclass and conname = 'webhook_pending_source_id_fkey'), 'c',
    'Foreign key webhook_pending_source_id_fkey is ON DELETE CASCADE: a deleted source takes its pending items.');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.webhook_pending'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('webhook_pending_pkey', 'p'), ('webhook_pending_source_id_fkey', 'f'),
             ('webhook_pending_source_type_nonempty', 'c'), ('webhook_pending_source_entity_id_nonempty', 'c')$$,
    'Table webhook_pending has exactly the expected named constraints.');
select indexes_are('public', 'webhook_pending', array['webhook_pending_pkey'], 'Table webhook_pending has exactly the expected indexes.');
select triggers_are('public', 'webhook_pending', array[]::name[], 'Table webhook_pending has no triggers.');
select table_privs_are('public', 'webhook_pending', 'harvester_api', array['SELECT', 'INSERT'],
    'The API role adds items as it accepts deliveries; it never takes them.');
select table_privs_are('public', 'webhook_pending', 'harvester_worker', array['SELECT', 'INSERT', 'DELETE'],
    'The worker role takes items into runs (and adds those of jobs deferred before migration 43).');

select * from finish();
rollback;
