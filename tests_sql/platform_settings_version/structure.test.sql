-- Structure of platform_settings_version: the single-row settings version.
begin;
select plan(12);

-- Test
select has_table('public', 'platform_settings_version', 'Table platform_settings_version exists.');
select columns_are('public', 'platform_settings_version', array['singleton', 'version'],
    'Table platform_settings_version has exactly the expected columns.');
select col_type_is('public', 'platform_settings_version', 'singleton', 'boolean', 'Column platform_settings_version.singleton is boolean.');
select col_not_null('public', 'platform_settings_version', 'singleton', 'Column platform_settings_version.singleton is NOT NULL.');
select col_default_is('public', 'platform_settings_version', 'singleton', 'true'::text, 'Column platform_settings_version.singleton defaults to true.');
select col_type_is('public', 'platform_settings_version', 'version', 'bigint', 'Column platform_settings_version.version is bigint.');
select col_not_null('public', 'platform_settings_version', 'version', 'Column platform_settings_version.version is NOT NULL.');
select col_default_is('public', 'platform_settings_version', 'version', '1'::text, 'Column platform_settings_version.version defaults to 1.');
select has_pk('public', 'platform_settings_version', 'Table platform_settings_version has a primary key.');
select col_is_pk('public', 'platform_settings_version', array['singleton'], 'The primary key of platform_settings_version is (singleton).');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.platform_settings_version'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('platform_settings_version_singleton', 'c'),
        ('platform_settings_version_pkey', 'p')$$,
    'Table platform_settings_version has exactly the expected named constraints.');
select indexes_are('public', 'platform_settings_version', array['platform_settings_version_pkey'], 'Table platform_settings_version has exactly the expected indexes.');

select * from finish();
rollback;
