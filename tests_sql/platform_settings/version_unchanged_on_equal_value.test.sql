-- Writing a setting with its current value leaves the version alone (seed 003: a no-op write is not an edit).
begin;
select plan(3);

-- Setup
select version as version_before from platform_settings_version \gset

-- Test
update platform_settings set value = '900' where key = 'sync_interval';
select is((select version from platform_settings_version), :version_before::bigint,
    'An UPDATE storing the current value does not raise the version.');
update platform_settings set value = value;
select is((select version from platform_settings_version), :version_before::bigint,
    'Rewriting every setting unchanged does not raise the version.');
-- PutSetting (sql/queries/settings.sql) with literals.
insert into platform_settings (key, value) values ('sync_interval'::text, '900'::jsonb)
on conflict (key) do update set value = excluded.value
where platform_settings.value is distinct from excluded.value;
select is((select version from platform_settings_version), :version_before::bigint,
    'PutSetting with the current value does not raise the version.');

select * from finish();
rollback;
