-- Trigger _200_bump_version raises platform_settings_version.version once per changed setting row
-- (seed 003 "Настройки": the version rises on every edit).
begin;
select plan(4);

-- Setup
select version as version_before from platform_settings_version \gset

-- Test
update platform_settings set value = '1800' where key = 'sync_interval';
select is((select version from platform_settings_version), (:version_before + 1)::bigint,
    'Changing one setting raises the version by one.');
update platform_settings set value = '"Europe/Berlin"' where key = 'timezone';
select is((select version from platform_settings_version), (:version_before + 2)::bigint,
    'Changing another setting raises the version again.');
update platform_settings set value = to_jsonb((value #>> '{}')::integer + 60)
 where key in ('probe_interval', 'watchdog_silence');
select is((select version from platform_settings_version), (:version_before + 4)::bigint,
    'One statement changing two settings raises the version by two.');
-- PutSetting (sql/queries/settings.sql) with literals.
insert into platform_settings (key, value) values ('max_deliveries'::text, '5'::jsonb)
on conflict (key) do update set value = excluded.value
where platform_settings.value is distinct from excluded.value;
select is((select version from platform_settings_version), (:version_before + 5)::bigint,
    'PutSetting with a new value raises the version.');

select * from finish();
rollback;
