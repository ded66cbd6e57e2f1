-- Structure of schema_migrations: dbmate-compatible bookkeeping with a checksum per migration.
begin;
select plan(13);

-- Test
select has_table('public', 'schema_migrations', 'Table schema_migrations exists.');
select columns_are('public', 'schema_migrations', array['version', 'checksum', 'applied_at'],
    'Table schema_migrations has exactly the expected columns.');
select col_type_is('public', 'schema_migrations', 'version', 'text', 'Column schema_migrations.version is text.');
select col_not_null('public', 'schema_migrations', 'version', 'Column schema_migrations.version is NOT NULL.');
select col_type_is('public', 'schema_migrations', 'checksum', 'text', 'Column schema_migrations.checksum is text.');
select col_is_null('public', 'schema_migrations', 'checksum', 'Column schema_migrations.checksum is nullable.');
select col_type_is('public', 'schema_migrations', 'applied_at', 'timestamp with time zone', 'Column schema_migrations.applied_at is timestamp with time zone.');
select col_not_null('public', 'schema_migrations', 'applied_at', 'Column schema_migrations.applied_at is NOT NULL.');
select col_default_is('public', 'schema_migrations', 'applied_at', 'now()'::text, 'Column schema_migrations.applied_at defaults to now().');
select has_pk('public', 'schema_migrations', 'Table schema_migrations has a primary key.');
select col_is_pk('public', 'schema_migrations', array['version'], 'The primary key of schema_migrations is (version).');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.schema_migrations'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('schema_migrations_pkey', 'p')$$,
    'Table schema_migrations has exactly the expected named constraints.');
select indexes_are('public', 'schema_migrations', array['schema_migrations_pkey'], 'Table schema_migrations has exactly the expected indexes.');

select * from finish();
rollback;
