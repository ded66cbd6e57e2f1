-- Structure of source_entity_totals: live entities per source, for GET /sources (decision 84).
begin;
select plan(14);

-- Test
select has_table('public', 'source_entity_totals', 'Table source_entity_totals exists.');
select columns_are('public', 'source_entity_totals', array['source_id', 'live'],
    'Table source_entity_totals has exactly the expected columns.');
select col_type_is('public', 'source_entity_totals', 'source_id', 'bigint', 'Column source_entity_totals.source_id is bigint.');
select col_type_is('public', 'source_entity_totals', 'live', 'bigint', 'Column source_entity_totals.live is bigint.');
select col_not_null('public', 'source_entity_totals', 'live', 'Column source_entity_totals.live is NOT NULL.');
select col_is_pk('public', 'source_entity_totals', array['source_id'], 'The primary key of source_entity_totals is (source_id).');
select fk_ok('public', 'source_entity_totals', array['source_id'], 'public', 'sources', array['id'],
    'source_entity_totals.(source_id) references sources.(id).');
select is((select confdeltype::text from pg_constraint where conrelid = 'public.source_entity_totals'::regclass
           and conname = 'source_entity_totals_source_id_fkey'), 'c',
    'Foreign key source_entity_totals_source_id_fkey is ON DELETE CASCADE (a deleted source takes its totals).');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.source_entity_totals'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('source_entity_totals_pkey', 'p'), ('source_entity_totals_source_id_fkey', 'f'),
        ('source_entity_totals_live_not_negative', 'c')$$,
    'Table source_entity_totals has exactly the expected named constraints.');
select indexes_are('public', 'source_entity_totals', array['source_entity_totals_pkey'],
    'Table source_entity_totals has exactly the expected indexes.');
select triggers_are('public', 'source_entity_totals', array[]::name[], 'Table source_entity_totals has no triggers of its own.');
select table_privs_are('public', 'source_entity_totals', 'harvester_worker', array['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    'The worker role writes source_entity_totals (the triggers run as the role that loads entities).');
select table_privs_are('public', 'source_entity_totals', 'harvester_api', array['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    'The API role writes source_entity_totals (a source''s deletion cascades to its entities as that role).');
select has_type('public', 'entity_totals_share', 'Type entity_totals_share (an entity''s signed share, passed within the triggers) exists.');

select * from finish();
rollback;
