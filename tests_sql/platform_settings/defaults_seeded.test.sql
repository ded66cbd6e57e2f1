-- The migration seeds the schedule defaults of seed 001 "Расписание" and starts the settings version at 1.
begin;
select plan(3);

-- Test
select results_eq(
    $$select key, value from platform_settings
       where key in ('sync_interval', 'reconcile_interval', 'reconcile_window', 'probe_interval', 'watchdog_silence', 'timezone')
       order by key$$,
    $$values ('probe_interval'::text, '86400'::jsonb),
             ('reconcile_interval', '604800'),
             ('reconcile_window', '8820'),
             ('sync_interval', '900'),
             ('timezone', '"UTC"'),
             ('watchdog_silence', '43200')$$,
    'Incremental every 900 s, reconciliation weekly on Sunday 03:00, a daily probe, a 12 h watchdog, UTC.');
select is((select 6 * 1440 + 3 * 60), (select (value #>> '{}')::integer from platform_settings where key = 'reconcile_window'),
    'The default reconcile window is Sunday 03:00 as minutes after Monday 00:00.');
select is((select count(*) from platform_settings_version), 1::bigint,
    'platform_settings_version holds exactly one row.');

select * from finish();
rollback;
