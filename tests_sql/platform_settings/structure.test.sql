-- Structure of platform_settings: key -> JSON defaults of seed 001 with typed-value CHECKs and the version trigger.
begin;
select plan(16);

-- Test
select has_table('public', 'platform_settings', 'Table platform_settings exists.');
select columns_are('public', 'platform_settings', array['key', 'value', 'updated_at'],
    'Table platform_settings has exactly the expected columns.');
select col_type_is('public', 'platform_settings', 'key', 'text', 'Column platform_settings.key is text.');
select col_not_null('public', 'platform_settings', 'key', 'Column platform_settings.key is NOT NULL.');
select col_type_is('public', 'platform_settings', 'value', 'jsonb', 'Column platform_settings.value is jsonb.');
select col_not_null('public', 'platform_settings', 'value', 'Column platform_settings.value is NOT NULL.');
select col_type_is('public', 'platform_settings', 'updated_at', 'timestamp with time zone', 'Column platform_settings.updated_at is timestamp with time zone.');
select col_not_null('public', 'platform_settings', 'updated_at', 'Column platform_settings.updated_at is NOT NULL.');
select col_default_is('public', 'platform_settings', 'updated_at', 'now()'::text, 'Column platform_settings.updated_at defaults to now().');
select has_pk('public', 'platform_settings', 'Table platform_settings has a primary key.');
select col_is_pk('public', 'platform_settings', array['key'], 'The primary key of platform_settings is (key).');
select set_eq(
    $$select conname::text, contype::text from pg_constraint
      where conrelid = 'public.platform_settings'::regclass and contype in ('p', 'u', 'f', 'c', 'x')$$,
    $$values ('platform_settings_key_known', 'c'),
        ('platform_settings_value_valid', 'c'),
        ('platform_settings_pkey', 'p')$$,
    'Table platform_settings has exactly the expected named constraints.');
select indexes_are('public', 'platform_settings', array['platform_settings_pkey'], 'Table platform_settings has exactly the expected indexes.');
select triggers_are('public', 'platform_settings', array['_100_timestamps', '_200_bump_version'], 'Table platform_settings has exactly the expected triggers.');
select trigger_is('public', 'platform_settings', '_100_timestamps', 'public', 'tg__set_updated_at', 'Trigger _100_timestamps on platform_settings runs tg__set_updated_at().');
select trigger_is('public', 'platform_settings', '_200_bump_version', 'public', 'tg_platform_settings__bump_version', 'Trigger _200_bump_version on platform_settings runs tg_platform_settings__bump_version().');

select * from finish();
rollback;
