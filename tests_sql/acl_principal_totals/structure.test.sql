-- Structure of acl_principal_totals: per principal and source, the live entities naming it (decision 84).
begin;
select plan(16);

-- Test
select has_table('public', 'acl_principal_totals', 'Table acl_principal_totals exists.');
select columns_are('public', 'acl_principal_totals', array['principal', 'source_id', 'entities'],
    'Table acl_principal_totals has exactly the expected columns.');
select col_type_is('public', 'acl_principal_totals', 'principal', 'text', 'Column acl_principal_totals.principal is text.');
select is((select collname::text from pg_attribute a join pg_collation c on c.oid = a.attcollation
           where a.attrelid = 'public.acl_principal_totals'::regclass and a.attname = 'principal'), 'C',
    'Column acl_principal_totals.principal is in byte order (collation "C"), the listing''s keyset order.');
select col_type_is('public', 'acl_principal_totals', 'source_id', 'bigint', 'Column acl_principal_totals.source_id is bigint.');
select col_type_is('public', 'acl_principal_totals', 'entities', 'bigint', 'Column acl_principal_totals.entities is bigint.');
select col_not_null('public', 'acl_principal_totals', 'entities', 'Column acl_principal_totals.entities is NOT NULL.');
select col_is_pk('public', 'acl_principal_totals', array['principal', 'source_id'],
    'The primary key of acl_principal_totals is (principal, source_id).');
select fk_ok('public', 'acl_principal_totals', array['source_id'], 'public', 'sources', array['id'],
    'acl_principal_totals.(source_id) references sources.(id).');
select is((select confdeltype::text from pg_constraint where conrelid = 'public.acl_principal_totals'::regclass
           and conname = 'acl_principal_totals_source_id_fkey'), 'c',
    'Foreign key acl_principal_totals_source_id_fkey is ON DELETE CASCADE (a deleted source takes its totals).');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.acl_principal_totals'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('acl_principal_totals_pkey', 'p'), ('acl_principal_totals_source_id_fkey', 'f'),
        ('acl_principal_totals_entities_positive', 'c')$$,
    'Table acl_principal_totals has exactly the expected named constraints.');
select indexes_are('public', 'acl_principal_totals', array['acl_principal_totals_pkey', 'acl_principal_totals_source_id_idx'],
    'Table acl_principal_totals has exactly the expected indexes.');
select has_index('public', 'acl_principal_totals', 'acl_principal_totals_source_id_idx', array['source_id'],
    'acl_principal_totals_source_id_idx serves the cascade of a source''s deletion.');
select triggers_are('public', 'acl_principal_totals', array[]::name[], 'Table acl_principal_totals has no triggers of its own.');
select table_privs_are('public', 'acl_principal_totals', 'harvester_worker', array['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    'The worker role writes acl_principal_totals (the triggers run as the role that loads entities).');
select table_privs_are('public', 'acl_principal_totals', 'harvester_api', array['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    'The API role writes acl_principal_totals (a source''s deletion cascades to its entities as that role).');

select * from finish();
rollback;
