-- Structure of schema_trigger_files: one row per re-appliable trigger file with the checksum migrate applied.
begin;
select plan(16);

-- Test
select has_table('public', 'schema_trigger_files', 'Table schema_trigger_files exists.');
select columns_are('public', 'schema_trigger_files', array['name', 'checksum', 'applied_at'],
    'Table schema_trigger_files has exactly the expected columns.');
select col_type_is('public', 'schema_trigger_files', 'name', 'text', 'Column schema_trigger_files.name is text.');
select col_not_null('public', 'schema_trigger_files', 'name', 'Column schema_trigger_files.name is NOT NULL.');
select col_type_is('public', 'schema_trigger_files', 'checksum', 'text', 'Column schema_trigger_files.checksum is text.');
select col_not_null('public', 'schema_trigger_files', 'checksum', 'Column schema_trigger_files.checksum is NOT NULL.');
select col_type_is('public', 'schema_trigger_files', 'applied_at', 'timestamp with time zone',
    'Column schema_trigger_files.applied_at is timestamp with time zone.');
select col_not_null('public', 'schema_trigger_files', 'applied_at', 'Column schema_trigger_files.applied_at is NOT NULL.');
select col_default_is('public', 'schema_trigger_files', 'applied_at', 'now()'::text,
    'Column schema_trigger_files.applied_at defaults to now().');
select col_is_pk('public', 'schema_trigger_files', array['name'], 'The primary key of schema_trigger_files is (name).');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.schema_trigger_files'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('schema_trigger_files_pkey', 'p'), ('schema_trigger_files_checksum_check', 'c')$$,
    'Table schema_trigger_files has exactly the expected named constraints.');
select indexes_are('public', 'schema_trigger_files', array['schema_trigger_files_pkey'],
    'Table schema_trigger_files has exactly the expected indexes.');
select throws_ok(
    $$insert into schema_trigger_files (name, checksum) values ('x.sql', 'not-a-sha256')$$,
    '23514', null, 'A checksum that is not 64 hex digits is refused by schema_trigger_files_checksum_check.');
select is(
    (select count(*)::int from schema_trigger_files where name like '%.sql'),
    (select count(*)::int from schema_trigger_files),
    'Every recorded name is a .sql file name.');
select table_privs_are('public', 'schema_trigger_files', 'harvester_api', array['SELECT'],
    'Role harvester_api may only read schema_trigger_files.');
select table_privs_are('public', 'schema_trigger_files', 'harvester_worker', array['SELECT'],
    'Role harvester_worker may only read schema_trigger_files.');

select * from finish();
rollback;
